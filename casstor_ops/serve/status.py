"""The HTTP status each failure becomes: one table, keyed by the error's class and exit code.

The CLI turns errors into exit codes in one place
(:func:`~casstor_ops.errors.run_reporting_errors`); this is the server's
counterpart, keyed on the same exit codes, so a new store error gets the
status its exit code means. The server's own refusals (a body too large, a
failed precondition, …) are :class:`HttpError` subclasses that carry their
status. Only an exception that is none of these and no Cassandra driver
error is a bug (500). Each status also names the failure's ``kind``, the
label of ``casstor_serve_errors_total`` in ``/metrics``.

=========================================  ======  ==============  ============================
failure                                    status  kind            why
=========================================  ======  ==============  ============================
bad key or ID (exit 2)                     400     bad_request     the client can fix it
client gone before the end of its body     400     client_gone     nothing stored
no or wrong token                          401     unauthorized
method not allowed                         405     method
unknown file (NotFoundError)               404     not_found
no body byte for the idle timeout          408     body_timeout    nothing stored
PUT without a length (--require-length)    411     length_required
If-Match / If-None-Match failed            412     precondition    nothing stored
body over --max-body                       413     too_large       nothing stored
missing or damaged block (exit 3)          502     corrupt         Cassandra returned bad data
reclaim window (5)                         503     window          retry later (Retry-After)
unreachable (6), timeout (8), lease        503     unavailable     retry later (Retry-After)
lapsed (11), file changed during the
read (12), any other CasstorError, a
driver error
credentials (7), not initialised (9),      503     setup           the server's set-up, not the
permission (10)                                                    request (no Retry-After)
still running when the grace time after    503     shutdown        (app.py; Retry-After) a PUT may
SIGTERM is over                                                    or may not have committed
anything else                              500     internal        a bug
=========================================  ======  ==============  ============================

Example::

    >>> status_of(MaintenanceError("an offline reclaim window is open"))
    Status(code=503, retry_after=5, kind='window')

Failures: none; the message for the client is ``str(error)`` (one line),
never a traceback, except for a 503, whose body is its kind's ``ADVICE``
(what to do; the cause, which may be a driver's text naming the nodes, is
logged only).
"""

from __future__ import annotations

from dataclasses import dataclass

from casstor_ops.errors import (EXIT_AUTH, EXIT_CORRUPT, EXIT_NOT_INITIALISED, EXIT_UNAUTHORISED, EXIT_USAGE,
                                CasstorError, MaintenanceError, NotFoundError)

RETRY_AFTER_S = 5
# A reclaim window lasts minutes; asking again every few seconds costs one read each.
WINDOW_RETRY_AFTER_S = 5

_CONFIGURATION = {EXIT_AUTH, EXIT_NOT_INITIALISED, EXIT_UNAUTHORISED}

# Every kind a failure can have, in the order /metrics lists them.
KINDS = ("bad_request", "client_gone", "unauthorized", "method", "not_found", "body_timeout", "length_required",
         "precondition", "too_large", "corrupt", "window", "unavailable", "setup", "shutdown", "internal")


# What a 503's body tells the client, by kind: what to do, never the cause's own text (a driver's message names
# the nodes' addresses); the cause goes to the server's log line only.
ADVICE = {
    "window": "an offline reclaim of the store is running: send the request again later (see Retry-After)",
    "unavailable": "the store is unavailable now: send the request again later (see Retry-After)",
    "setup": "the server cannot use its store: its operator must fix the server's set-up (see its log)",
}


@dataclass(frozen=True)
class Status:
    """An HTTP status code, the Retry-After seconds to send with it (None: no header), and the failure's kind."""

    code: int
    retry_after: int | None = None
    kind: str = "internal"


class HttpError(Exception):
    """A refusal of the server's own, with its status (``str()`` is the one-line message for the client)."""

    status = Status(500)


class LengthRequired(HttpError):
    """A PUT without Content-Length, where the server requires one."""

    status = Status(411, kind="length_required")


class BodyTooLarge(HttpError):
    """A body longer than the server accepts (said by Content-Length, or found while reading a chunked one)."""

    status = Status(413, kind="too_large")


class PreconditionFailed(HttpError):
    """An ``If-Match`` or ``If-None-Match`` of a PUT that the current head does not satisfy."""

    status = Status(412, kind="precondition")


def status_of(error: BaseException) -> Status:
    """The status that answers a request which failed with ``error``."""
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable

    if isinstance(error, HttpError):
        return error.status
    if isinstance(error, NotFoundError):
        return Status(404, kind="not_found")
    if isinstance(error, MaintenanceError):
        return Status(503, WINDOW_RETRY_AFTER_S, "window")
    if isinstance(error, CasstorError):
        if error.exit_code == EXIT_USAGE:
            return Status(400, kind="bad_request")
        if error.exit_code == EXIT_CORRUPT:
            return Status(502, kind="corrupt")
        if error.exit_code in _CONFIGURATION:
            return Status(503, kind="setup")
        return Status(503, RETRY_AFTER_S, "unavailable")
    if isinstance(error, (DriverException, NoHostAvailable)):  # NoHostAvailable is no DriverException
        return Status(503, RETRY_AFTER_S, "unavailable")
    return Status(500)


def one_line(error: BaseException) -> str:
    """``str(error)`` on one line (a driver's message may span several): for a log line or a response body."""
    return " ".join(str(error).split())
