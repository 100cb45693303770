"""User-facing errors: one line, a cause and a fix, and an exit code.

Every failure a user can cause or repair (bad input, a missing Java, a port
in use, an unreachable cluster, a corrupt block) is raised as a
:class:`CasstorError`; the CLI prints ``casstor: <message>`` and exits with
``exit_code``. Anything else is a bug and keeps its traceback.

Example::

    >>> raise CasstorError("no such file: 'x'")        # doctest: +SKIP
"""

from __future__ import annotations

import sys
from typing import Callable

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CORRUPT = 3      # missing or damaged blocks (borg/restic style: its own code)
EXIT_PARTIAL = 4      # a bulk job where some items failed and the rest succeeded
EXIT_MAINTENANCE = 5  # refused because a reclaim window is open
EXIT_UNREACHABLE = 6  # no Cassandra host accepted a connection
EXIT_AUTH = 7         # Cassandra refused the credentials
EXIT_TIMEOUT = 8      # Cassandra did not answer in time (overloaded, starting, or packets dropped)
EXIT_NOT_INITIALISED = 9  # no store here: no keyspace, settings table or settings ('casstor init' makes them)
EXIT_UNAUTHORISED = 10    # the credentials were accepted, but the role may not do what was asked
EXIT_LEASE_LAPSED = 11    # a writer's or reclaim's lease may have expired: it stopped before its next fenced write
EXIT_CHANGED = 12         # the file changed during a restore: running it again restores the new version


class CasstorError(Exception):
    """An error the user can act on; ``str(err)`` is a single line."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(" ".join(message.split()))
        if exit_code is not None:
            self.exit_code = exit_code


class NotFoundError(CasstorError):
    """No committed file has the ID asked for (exit 1, as any other error; the HTTP server answers 404)."""


class CorruptionError(CasstorError):
    """A block is missing or its content does not match its hash."""

    exit_code = EXIT_CORRUPT


class FileChangedError(CasstorError):
    """A restore's version was superseded (or removed) and freed by reclaim while it was read."""

    exit_code = EXIT_CHANGED


class MaintenanceError(CasstorError):
    """The store is in a reclaim window; writers must wait."""

    exit_code = EXIT_MAINTENANCE


class LeaseLapsedError(CasstorError):
    """A holder's lease row may have expired (see :mod:`casstor_ops.store.coordination.heartbeat`); it wrote nothing after."""

    exit_code = EXIT_LEASE_LAPSED


# A replica answered a read with an error: what a damaged SSTable gives (the node refuses a chunk whose checksum
# fails, and the coordinator does not ask another replica instead).
READ_FAILURE_HINT = ("a replica failed the read: if a node's system.log has a CorruptSSTableException, one of its "
                     "SSTables is damaged (docs/operations.md, 'A damaged replica')")


def run_reporting_errors(action: Callable[[], int | None]) -> int:
    """Run ``action``; a failure the user can act on becomes one ``casstor:`` line and its exit code.

    The one place where commands, jobs and benchmarks turn exceptions into
    exit codes: :class:`CasstorError` keeps its own, a failed Cassandra
    request is 1, Ctrl-C is 130. Anything else is a bug and propagates
    with its traceback.

    Example::

        >>> sys.exit(run_reporting_errors(lambda: main(args)))   # doctest: +SKIP
    """
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable

    try:
        return action() or 0
    except CasstorError as err:
        print(f"casstor: {err}", file=sys.stderr)
        return err.exit_code
    except (DriverException, NoHostAvailable) as err:  # NoHostAvailable is no DriverException
        hint = f"; {READ_FAILURE_HINT}" if type(err).__name__ == "ReadFailure" else ""
        print(f"casstor: Cassandra request failed: {type(err).__name__}: {' '.join(str(err).split())}{hint}",
              file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("casstor: interrupted", file=sys.stderr)
        return 130
