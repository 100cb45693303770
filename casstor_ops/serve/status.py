"""The HTTP status each failure becomes: one table, keyed by the error's class and exit code.

The CLI turns errors into exit codes in one place
(:func:`~casstor_ops.errors.run_reporting_errors`); this is the server's
counterpart, keyed on the same exit codes, so a new store error gets the
status its exit code means. Only an exception that is no CasstorError and no
Cassandra driver error is a bug (500).

=========================================  ======  ============================
failure                                    status  why
=========================================  ======  ============================
bad key or ID (exit 2)                     400     the client can fix it
unknown file (NotFoundError)               404
missing or damaged block (exit 3)          502     Cassandra returned bad data
reclaim window (5), unreachable (6),       503     retry later (Retry-After)
timeout (8), lease lapsed (11), file
changed during the read (12), any other
CasstorError, a driver error
credentials (7), not initialised (9),      503     the server's set-up, not the
permission (10)                                    request (no Retry-After)
anything else                              500     a bug
=========================================  ======  ============================

Example::

    >>> status_of(MaintenanceError("an offline reclaim window is open"))
    Status(code=503, retry_after=5)

Failures: none; the message for the client is ``str(error)`` (one line),
never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

from casstor_ops.errors import (EXIT_AUTH, EXIT_CORRUPT, EXIT_NOT_INITIALISED, EXIT_UNAUTHORISED, EXIT_USAGE,
                                CasstorError, MaintenanceError, NotFoundError)

RETRY_AFTER_S = 5
# A reclaim window lasts minutes; asking again every few seconds costs one read each.
WINDOW_RETRY_AFTER_S = 5

_CONFIGURATION = {EXIT_AUTH, EXIT_NOT_INITIALISED, EXIT_UNAUTHORISED}


@dataclass(frozen=True)
class Status:
    """An HTTP status code, and the Retry-After seconds to send with it (None: no header)."""

    code: int
    retry_after: int | None = None


def status_of(error: BaseException) -> Status:
    """The status that answers a request which failed with ``error``."""
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable

    if isinstance(error, NotFoundError):
        return Status(404)
    if isinstance(error, MaintenanceError):
        return Status(503, WINDOW_RETRY_AFTER_S)
    if isinstance(error, CasstorError):
        if error.exit_code == EXIT_USAGE:
            return Status(400)
        if error.exit_code == EXIT_CORRUPT:
            return Status(502)
        if error.exit_code in _CONFIGURATION:
            return Status(503)
        return Status(503, RETRY_AFTER_S)
    if isinstance(error, (DriverException, NoHostAvailable)):  # NoHostAvailable is no DriverException
        return Status(503, RETRY_AFTER_S)
    return Status(500)
