"""The request dispatcher: PUT, GET, HEAD and DELETE of ``/<key>`` on one :class:`~casstor_ops.store.api.Store`.

=======  =================================================================
PUT      store the body under the key (:mod:`.writes`)
GET      the content, or one range of it (:mod:`.reads`)
HEAD     the headers of GET, no body (:mod:`.reads`)
DELETE   remove the file (:mod:`.writes`)
=======  =================================================================

:class:`Handlers` checks what comes before the key (the bearer token, the
method), routes the request to :class:`~casstor_ops.serve.reads.Reads` or
:class:`~casstor_ops.serve.writes.Writes`, and turns every failure into a
response. On the metrics port (``--metrics-port``), ``GET /metrics`` answers
the Prometheus text of :mod:`.metrics` instead; the bearer token, when one is
set, is required there too.

Example::

    >>> handlers = Handlers(store, SharedLease(store.session), Policy(), metrics,
    ...                     ContentCache(1 << 28, 1 << 20))  # doctest: +SKIP
    >>> app = build_app(handlers)  # doctest: +SKIP

Failures: every error is answered with the status of :mod:`.status`, a
one-line text body (``internal error`` for a bug: no traceback reaches the
client), one log line naming the method, key and cause, and one count in
``casstor_serve_errors_total``. A 401 (no or a wrong token when one is
required) and a 405 (another method, or a write to a read-only server) come
before the key is even decoded. A failed PUT closes its connection (its
body may not have been read). A request still running when the grace time
after SIGTERM is over is answered 503 with Retry-After. A GET cut short after
its headers went out (:mod:`.reads`) drops its connection.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from casstor_ops.serve.content_cache import ContentCache
from casstor_ops.serve.keys import parse_key
from casstor_ops.serve.metrics import CONTENT_TYPE, Metrics, Recorder
from casstor_ops.serve.policy import Policy
from casstor_ops.serve.reads import CutShort, Reads
from casstor_ops.serve.shared_lease import SharedLease
from casstor_ops.serve.status import ADVICE, RETRY_AFTER_S, Status, one_line, status_of
from casstor_ops.serve.writes import Writes
from casstor_ops.store.api import Store

log = logging.getLogger("casstor.serve")

READ_METHODS = ("GET", "HEAD")
WRITE_METHODS = ("PUT", "DELETE")
METRICS_PATH = b"/metrics"


class Handlers:
    """The server's dispatcher, with its :class:`~casstor_ops.serve.reads.Reads` and
    :class:`~casstor_ops.serve.writes.Writes`; ``close()`` when the server stopped."""

    def __init__(self, store: Store, leases: SharedLease, policy: Policy, metrics: Metrics, cache: ContentCache,
                 worker: int = 0) -> None:
        self._policy = policy
        self._metrics = metrics
        self.recorder: Recorder = metrics.recorder(worker)
        self._allowed = READ_METHODS if policy.read_only else READ_METHODS + WRITE_METHODS
        self.reads = Reads(store, cache, self.recorder)
        self.writes = Writes(store, leases, policy, checks=self.reads.pool)

    def close(self) -> None:
        self.reads.close()
        self.writes.close()

    def _refused(self, request: Request) -> Response | None:
        """The 401 or 405 that comes before anything else, or None."""
        token = self._policy.token
        if token is not None and not token.allows(request.headers.get("authorization")):
            # The raw path, as repr: whatever a client puts in it stays on one log line.
            log.warning("%s %r -> 401: no or wrong bearer token", request.method, request.scope["raw_path"])
            self.recorder.error("unauthorized")
            return PlainTextResponse("a bearer token is required\n", 401, {"www-authenticate": "Bearer"})
        return None

    def _not_allowed(self, request: Request, allowed: tuple[str, ...]) -> Response:
        log.warning("%s %r -> 405: allowed here: %s", request.method, request.scope["raw_path"], ", ".join(allowed))
        self.recorder.error("method")
        return PlainTextResponse(f"{request.method} is not allowed here\n", 405, {"allow": ", ".join(allowed)})

    async def handle(self, request: Request) -> Response:
        """Answer one request on the files port (every path and method comes here)."""
        refused = self._refused(request)
        if refused is not None:
            return refused
        if request.method not in self._allowed:
            return self._not_allowed(request, self._allowed)
        key = None
        try:
            key = parse_key(request.scope["raw_path"])
            if request.method == "PUT":
                return await self.writes.put(request, key)
            if request.method == "DELETE":
                return await self.writes.delete(request, key)
            return await self.reads.get(request, key, send_body=request.method == "GET")
        except Exception as err:  # every failure becomes a status and one log line (a bug: 500)
            return self._failure(request.method, key, err)
        except asyncio.CancelledError:
            # uvicorn cancels what still runs when the grace time after SIGTERM is over.
            return self._cancelled(request.method, key)

    def _cancelled(self, method: str, key: str | None) -> Response:
        log.warning("%s %r -> 503: the server stopped before the request finished (grace time over)", method, key)
        self.recorder.error("shutdown")
        return PlainTextResponse("the server stopped before this request finished: send it again\n", 503,
                                 _retry_after(Status(503, RETRY_AFTER_S)))

    async def metrics(self, request: Request) -> Response:
        """Answer one request on the metrics port: ``GET /metrics``."""
        refused = self._refused(request)
        if refused is not None:
            return refused
        if request.method not in READ_METHODS:
            return self._not_allowed(request, READ_METHODS)
        if request.scope["raw_path"] != METRICS_PATH:
            log.warning("%s %r -> 404 on the metrics port", request.method, request.scope["raw_path"])
            self.recorder.error("not_found")
            return PlainTextResponse("the metrics are at /metrics\n", 404)
        return Response(self._metrics.render(), headers={"content-type": CONTENT_TYPE})

    def _failure(self, method: str, key: str | None, err: Exception) -> Response:
        """The response to a failed request, logged as one line and counted."""
        if isinstance(err, ClientDisconnect):
            log.warning("%s %r: the client disconnected before the end of its body; nothing stored", method, key)
            self.recorder.error("client_gone")
            return PlainTextResponse("incomplete body\n", 400)
        status = status_of(err)
        self.recorder.error(status.kind)
        if status.code == 500:
            log.error("%s %r -> 500 (a bug): %s: %s", method, key, type(err).__name__, one_line(err))
            log.debug("traceback of the 500", exc_info=err)
            return PlainTextResponse("internal error\n", 500)
        log.warning("%s %r -> %d: %s", method, key, status.code, one_line(err))
        return PlainTextResponse(f"{ADVICE.get(status.kind, one_line(err))}\n", status.code, _retry_after(status))


def _retry_after(status: Status) -> dict[str, str] | None:
    return {"retry-after": str(status.retry_after)} if status.retry_after is not None else None


def build_app(handlers: Handlers, metrics_port: int | None = None) -> ASGIApp:
    """The ASGI application: a request on ``metrics_port`` goes to ``handlers.metrics``, any other (whatever its
    path and method) to ``handlers.handle``.

    No router: the key is the whole path, and a router's own 404 and 405
    would answer before the token is checked.
    """
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        on_metrics_port = metrics_port is not None and (scope.get("server") or (None, None))[1] == metrics_port
        response = await (handlers.metrics(request) if on_metrics_port else handlers.handle(request))
        if request.method == "PUT" and response.status_code >= 400:
            response.headers["connection"] = "close"  # the rest of its body may still be on the way
        try:
            await response(scope, receive, send)
        except CutShort:
            # Returning with the response unfinished makes uvicorn drop the connection with a one-line
            # error, where raising would log a traceback of what Reads._rest already logged.
            return
        except asyncio.CancelledError:  # the grace time after SIGTERM is over: dropped, as above
            log.warning("%s %r: response cut short: the server stopped (grace time over)", request.method,
                        scope["raw_path"])
            handlers.recorder.error("shutdown")

    return app
