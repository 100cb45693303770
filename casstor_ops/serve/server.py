"""Start and stop ``casstor serve``: the listening socket, the store, uvicorn, and the clean-up on SIGTERM.

The socket is bound before the store is opened, so a port in use fails at
once; ``--port 0`` takes a free port. Once listening, one line on stderr
says where: ``casstor serve: listening on http://127.0.0.1:8080/ …``
(scripts and tests read the port from it). SIGTERM or Ctrl-C stops taking
connections, lets running requests finish (up to ``GRACE_S``), then gives
up the writer lease and closes the store's connection: a SIGTERM exits 0.

Example::

    >>> serve(ServeOptions(host="127.0.0.1", port=0))   # doctest: +SKIP
    casstor serve: listening on http://127.0.0.1:41873/ (read-write, no token)

Failures: a host/port that cannot be bound raises
:class:`~casstor_ops.errors.CasstorError` (exit 1); connecting to the store
fails as every command does (exit 6 unreachable, 9 not initialised, …).
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import sys
from dataclasses import dataclass

import uvicorn

from casstor_ops.errors import CasstorError
from casstor_ops.serve.app import Handlers, build_app
from casstor_ops.serve.auth import Token
from casstor_ops.serve.shared_lease import DEFAULT_REUSE_S, SharedLease
from casstor_ops.store.api import Store

log = logging.getLogger("casstor.serve")

GRACE_S = 10
BACKLOG = 128


@dataclass(frozen=True)
class ServeOptions:
    """What `casstor serve` was asked for: where to listen, the token (None: none required), read-only, lease reuse."""

    host: str = "127.0.0.1"
    port: int = 8080
    token: Token | None = None
    read_only: bool = False
    lease_reuse_s: float = DEFAULT_REUSE_S


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (IPv4 or IPv6, as the host resolves)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as err:
        raise CasstorError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)  # connections wait in the backlog until uvicorn accepts them
    except OSError as err:
        sock.close()
        raise CasstorError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("casstor serve: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def serve(options: ServeOptions) -> None:
    """Serve the store until SIGTERM or Ctrl-C."""
    _log_to_stderr()
    sock = _listen(options.host, options.port)
    with sock, Store.open() as store:
        leases = SharedLease(store.session, options.lease_reuse_s)
        handlers = Handlers(store, leases, options.token, options.read_only)
        try:
            config = uvicorn.Config(build_app(handlers), log_level="warning", access_log=False, lifespan="off",
                                    timeout_graceful_shutdown=GRACE_S)
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            log.info("listening on http://%s:%d/ (%s, %s)", shown, port,
                     "read-only" if options.read_only else "read-write",
                     "bearer token required" if options.token else "no token")
            if options.token is None and not _is_loopback(options.host):
                log.warning("%s is not a loopback address and no --token-file was given: anyone who can reach "
                            "it can read and write the store", options.host)
            # uvicorn re-raises the signal that stopped it once it is done; a SIGTERM must then come back here
            # (to give up the lease), not kill the process.
            previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
            try:
                uvicorn.Server(config).run(sockets=[sock])
            finally:
                signal.signal(signal.SIGTERM, previous)
        finally:
            handlers.close()
            leases.close()
    log.info("stopped")
