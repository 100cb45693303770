"""Start and stop ``casstor serve``: the listening sockets, the store, uvicorn, TLS, and the clean-up on SIGTERM.

The sockets (the files port and, with ``--metrics-port``, the metrics
port) are bound before the store is opened, so a port in use fails at once;
port 0 takes a free port. Once listening, one line on stderr says where::

    casstor serve: listening on http://127.0.0.1:8080/ (read-write, no token, 1 worker)

and with ``--metrics-port`` it ends ``…, metrics on http://127.0.0.1:9100/metrics`` (scripts and the
tests read the ports from it). ``--cert``/``--key`` serve HTTPS on both
ports (the pair is loaded once before anything starts). ``--workers N``
forks N worker processes on the same sockets (:mod:`.workers`). SIGTERM or
Ctrl-C stops taking connections, lets running requests finish (up to
``GRACE_S``), then gives up the writer lease and closes the store's
connection: a SIGTERM exits 0.

Example::

    >>> serve(ServeOptions(host="127.0.0.1", port=0))   # doctest: +SKIP
    casstor serve: listening on http://127.0.0.1:41873/ (read-write, no token, 1 worker)

Failures: a host/port that cannot be bound raises
:class:`~casstor_ops.errors.CasstorError` (exit 1); a certificate or key that
cannot be loaded, exit 2; connecting to the store fails as every command
does (exit 6 unreachable, 9 not initialised, …).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import socket
import ssl
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import uvicorn

from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.serve.app import Handlers, Policy, build_app
from casstor_ops.serve.content_cache import DEFAULT_CACHE_BYTES, ContentCache
from casstor_ops.serve.deadlines import HeaderDeadline
from casstor_ops.serve.metrics import Metrics
from casstor_ops.serve.observe import observed
from casstor_ops.serve.s3.addressing import Addressing
from casstor_ops.serve.s3.app import S3Handlers
from casstor_ops.serve.shared_lease import DEFAULT_REUSE_S, SharedLease
from casstor_ops.serve.policy import HEADER_TIMEOUT_S
from casstor_ops.serve.streams import SMALL_BODY_BYTES
from casstor_ops.serve.workers import run_workers
from casstor_ops.store.api import Store

log = logging.getLogger("casstor.serve")

GRACE_S = 10
BACKLOG = 128


@dataclass(frozen=True)
class ServeOptions:
    """What `casstor serve` was asked for (see ``casstor serve --help``)."""

    host: str = "127.0.0.1"
    port: int = 8080
    policy: Policy = field(default_factory=Policy)
    lease_reuse_s: float = DEFAULT_REUSE_S
    workers: int = 1
    cert: str | None = None
    key: str | None = None
    access_log: bool = False
    metrics_port: int | None = None
    cache_bytes: int = DEFAULT_CACHE_BYTES
    header_timeout_s: float = HEADER_TIMEOUT_S
    s3_secrets: dict[str, str] | None = field(default=None, repr=False)  # --s3: access key -> secret key
    s3_addressing: Addressing = Addressing()  # --s3-domain: the domains whose subdomains name buckets


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


def _check_tls(cert: str | None, key: str | None) -> None:
    """Load the certificate and key once, so a bad pair is one line before anything is served."""
    if cert is None:
        return
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        raise CasstorError(f"cannot load the TLS certificate {cert!r}"
                           f"{f' and key {key!r}' if key else ''}: {getattr(err, 'strerror', None) or err}",
                           EXIT_USAGE) from None


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


def _url(options: ServeOptions, sock: socket.socket, path: str = "") -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if options.cert else 'http'}://{shown}:{port}/{path}"


def _announce(options: ServeOptions, sockets: list[socket.socket]) -> None:
    policy = options.policy
    workers = f"{options.workers} worker{'s' if options.workers > 1 else ''}"
    metrics = f", metrics on {_url(options, sockets[1], 'metrics')}" if len(sockets) > 1 else ""
    access = (f"S3, {len(options.s3_secrets)} access key{'s' if len(options.s3_secrets) > 1 else ''}"
              if options.s3_secrets is not None else "bearer token required" if policy.token else "no token")
    if options.s3_addressing.domains:
        access += f", buckets also as *.{', *.'.join(options.s3_addressing.domains)}"
    log.info("listening on %s (%s, %s, %s)%s", _url(options, sockets[0]),
             "read-only" if policy.read_only else "read-write", access, workers, metrics)
    if policy.token is None and options.s3_secrets is None and not _is_loopback(options.host):
        log.warning("%s is not a loopback address and no --token-file was given: anyone who can reach "
                    "it can read and write the store", options.host)


@contextlib.contextmanager
def _handlers(options: ServeOptions, metrics: Metrics, worker: int) -> Iterator[Handlers]:
    """The store, its shared lease and the handlers of one worker; all closed on exit."""
    with Store.open() as store:
        leases = SharedLease(store.session, options.lease_reuse_s)
        cache = ContentCache(options.cache_bytes, SMALL_BODY_BYTES)
        if options.s3_secrets is not None:
            handlers = S3Handlers(store, leases, options.policy, metrics, cache, worker, options.s3_secrets,
                                  options.s3_addressing)
        else:
            handlers = Handlers(store, leases, options.policy, metrics, cache, worker)
        try:
            yield handlers
        finally:
            handlers.close()
            leases.close()


def _serve_worker(options: ServeOptions, sockets: list[socket.socket], metrics: Metrics, worker: int,
                  ready: Callable[[], None]) -> None:
    """One worker: open the store, serve until SIGTERM or Ctrl-C, give up the lease."""
    with _handlers(options, metrics, worker) as handlers:
        metrics_port = sockets[1].getsockname()[1] if len(sockets) > 1 else None
        app = observed(build_app(handlers, metrics_port), handlers.recorder, options.access_log)
        # uvloop and httptools (compiled): 1.25x the rate of asyncio and h11 at 64 KiB (docs/serve.md).
        http = partial(HeaderDeadline, header_timeout_s=options.header_timeout_s)
        config = uvicorn.Config(app, loop="uvloop", http=http, log_level="warning", access_log=False,
                                lifespan="off", timeout_graceful_shutdown=GRACE_S, ssl_certfile=options.cert,
                                ssl_keyfile=options.key)
        run_until_stopped(uvicorn.Server(config), sockets, ready)


def run_until_stopped(server: uvicorn.Server, sockets: list[socket.socket], ready: Callable[[], None]) -> None:
    """Call ``ready()`` (the ``listening on`` line), then run ``server`` until SIGTERM or Ctrl-C; return after it.

    uvicorn installs its own handlers only inside ``run`` and raises the
    signal that stopped it again once it is done. From before ``ready()`` to
    after that, a SIGTERM or Ctrl-C here asks ``server`` to stop: one sent as
    soon as the line is out neither kills the process nor is lost, and the
    caller still gets to give up its lease.
    """
    def stop(signum: int, frame: object) -> None:
        server.should_exit = True  # checked by uvicorn once it has started, however early this came

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        ready()
        server.run(sockets=sockets)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(options: ServeOptions) -> int:
    """Serve the store until SIGTERM or Ctrl-C; the exit status."""
    _log_to_stderr()
    _check_tls(options.cert, options.key)
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(_listen(options.host, options.port))]
        if options.metrics_port is not None:
            sockets.append(stack.enter_context(_listen(options.host, options.metrics_port)))
        metrics = Metrics(options.workers)
        code = 0
        if options.workers == 1:
            _serve_worker(options, sockets, metrics, 0, lambda: _announce(options, sockets))
        else:
            code = run_workers(options.workers,
                               lambda index, ready: _serve_worker(options, sockets, metrics, index, ready),
                               lambda: _announce(options, sockets))
    log.info("stopped" if code == 0 else f"stopped (exit status {code})")
    return code
