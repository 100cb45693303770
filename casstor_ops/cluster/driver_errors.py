"""Which driver failures are the user's to fix, and the one line, with its exit code, that says so.

:func:`connect_error` classifies a failure to open a session, or of a
request on an open one: credentials refused (``EXIT_AUTH``), a permission
refused (``EXIT_UNAUTHORISED``), no answer in time (``EXIT_TIMEOUT``), no
host reachable (``EXIT_UNREACHABLE``), each naming the hosts and the fix.
Any other failure (a protocol error, a bug) is not classified, so it keeps
its traceback. :func:`reported_as_user_errors` applies it to a block of code.

Example::

    >>> with reported_as_user_errors(endpoint, "read the store's settings"):  # doctest: +SKIP
    ...     session.execute(statement)

Failures: none of its own; it raises the classified error, or re-raises
the original.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from cassandra import AuthenticationFailed, OperationTimedOut, Timeout, Unauthorized, UnresolvableContactPoints
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionException

from casstor_ops.cluster.endpoint import PASSWORD_FILE_SETTING, Endpoint
from casstor_ops.errors import EXIT_AUTH, EXIT_TIMEOUT, EXIT_UNAUTHORISED, EXIT_UNREACHABLE, CasstorError


@contextlib.contextmanager
def reported_as_user_errors(endpoint: Endpoint, doing: str | None = None) -> Iterator[None]:
    """Raise the one-line error of :func:`connect_error` for what fails inside; anything else as it is.

    ``doing`` None: opening a session; else the request, e.g. ``"read the store's settings"``.

    Example::

        >>> with reported_as_user_errors(endpoint_of(session), "read the store's settings"):  # doctest: +SKIP
        ...     session.execute(statement)
    """
    try:
        yield
    except Exception as err:
        user_error = connect_error(err, endpoint, doing)
        if user_error is None:
            raise
        raise user_error from None


def connect_error(err: Exception, endpoint: Endpoint, doing: str | None = None) -> CasstorError | None:
    """The one-line error, with its exit code, for a failure to open a session, or of a request when ``doing``
    names it; None if it is not one.

    Checked in this order over the failure (or, for ``NoHostAvailable``, each
    host's failure): credentials refused (``EXIT_AUTH``); permission refused
    (``EXIT_UNAUTHORISED``: "not authorised to <doing>"); no answer in time,
    from the client or the coordinator (``EXIT_TIMEOUT``); every host refused,
    reset, unresolvable or failed TLS, or for a request no host up at all
    (``EXIT_UNREACHABLE``). Anything else (a protocol error, a bug) is None,
    so the caller re-raises it with its traceback.

    Example::

        >>> refused = NoHostAvailable("Unable to connect", {"127.0.0.1:1": ConnectionRefusedError(111, "refused")})
        >>> connect_error(refused, Endpoint(("127.0.0.1",), 1, False)).exit_code
        6
    """
    causes = list(err.errors.values()) if isinstance(err, NoHostAvailable) else [err]
    where = endpoint.description
    refused = next((cause for cause in causes if isinstance(cause, AuthenticationFailed)), None)
    if refused is not None:
        return CasstorError(f"Cassandra at {where} refused the credentials: {refused}; "
                            f"check CASSTOR_USERNAME and {PASSWORD_FILE_SETTING} (or CASSTOR_PASSWORD)", EXIT_AUTH)
    denied = next((cause for cause in causes if isinstance(cause, Unauthorized)), None)
    if denied is not None:
        return CasstorError(f"not authorised to {doing or 'connect'}: {denied}; grant the role "
                            f"{endpoint.username or '(anonymous)'} the permission, or use another "
                            f"CASSTOR_USERNAME", EXIT_UNAUTHORISED)
    late = next((cause for cause in causes if isinstance(cause, (OperationTimedOut, Timeout))), None)
    if late is not None:
        action = f" to {doing}" if doing else ""
        return CasstorError(f"Cassandra at {where} did not answer in time{action}: {late}; the node may be "
                            f"overloaded or still starting, or a firewall drops the packets: retry, or see the "
                            f"node's log", EXIT_TIMEOUT)
    unreachable = (ConnectionException, OSError, UnresolvableContactPoints)  # OSError covers refused, reset, TLS
    # A request finds no host at all when the driver has marked every one down (a connect always tries some).
    all_down = doing is not None and isinstance(err, NoHostAvailable) and not causes
    if all_down or (causes and all(isinstance(cause, unreachable) for cause in causes)):
        reason = ("no host is up" if all_down else
                  "no host name resolves" if isinstance(err, UnresolvableContactPoints) else causes[0])
        return CasstorError(f"cannot reach Cassandra at {where}: {reason}; {_reach_fix(causes, endpoint)}",
                            EXIT_UNREACHABLE)
    return None


def _reach_fix(causes: list[Exception], endpoint: Endpoint) -> str:
    """What to check when no host could be reached: the CA for an untrusted certificate, TLS for a node that
    reset a plain-text connection, else the hosts (or the local node's status)."""
    if any("CERTIFICATE_VERIFY_FAILED" in str(cause) for cause in causes):
        return (f"the nodes' certificate is not trusted: CASSTOR_SSL_CA={endpoint.ssl_ca} must be the CA that "
                f"signed it, and it must name the address connected to")
    if endpoint.ssl_ca is None and any(isinstance(cause, ConnectionResetError) for cause in causes):
        return "if the nodes accept TLS clients only, set CASSTOR_SSL_CA to the CA file that signed their certificates"
    if endpoint.embedded:
        return "run 'casstor cluster status' and see the node's log"
    return "check the hosts or unset CASSTOR_NODES to use the local node"
