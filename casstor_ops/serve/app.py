"""The request handlers: PUT, GET, HEAD and DELETE of ``/<key>`` on one :class:`~casstor_ops.store.api.Store`.

=======  =================================================================
PUT      store the body under the key (200, the store's JSON result:
         ``{"id","bytes","blocks","new_blocks","new_bytes","seconds",
         "new_stored_bytes"}``, and the new version's ETag); ``If-Match`` /
         ``If-None-Match``: 412 when the current head does not satisfy them;
         411 without Content-Length where one is required, 413 over the
         body limit
GET      the content (200), or one range of it (206); ETag, Last-Modified,
         Content-Length; ``If-None-Match`` naming the ETag: 304
HEAD     the headers of GET, no body
DELETE   remove the file (200, its last head as JSON); its blocks stay until reclaim;
         ``If-Match`` / ``If-None-Match`` as for PUT (412, nothing removed)
=======  =================================================================

On the metrics port (``--metrics-port``), ``GET /metrics`` answers the
Prometheus text of :mod:`.metrics` instead; the bearer token, when one is
set, is required there too.

A GET or HEAD reads the file's head without a thread: the driver's answer
resolves a future of the event loop (:meth:`Store.stat_async
<casstor_ops.store.api.Store.stat_async>`). Every other store call blocks
(it drives the driver's futures on its own thread), so it runs on a
bounded worker pool (``WRITE_THREADS`` for PUT and DELETE, ``READ_THREADS``
for reading content): a write holds an upload's worth of memory, so fewer
run at once. Bodies are streamed both ways (:mod:`.streams`), except small
ones (at most ``SMALL_BODY_BYTES``): a PUT's first ``SMALL_BODY_BYTES`` are
read on the event loop before it takes a write thread (at most
``SMALL_BODIES_HELD`` PUTs at once), so a slow client pins no thread while it
sends them and is ended by the body deadline (``Policy.body_timeout_s``,
408); a body that ended there is handed to its worker as a seekable file, so
the store can re-read a block that vanished meanwhile (online reclaim) where
a stream cannot be; a GET of
such a file is answered in one piece, its content read whole by one worker
call (no per-chunk hand-offs between the worker and the event loop) and
kept in the :mod:`.content_cache` by its file hash, so the next GET of that
content reads only the head.
In a store that keeps small files inline (:mod:`casstor_ops.store.inline`),
an unconditional PUT of one is committed on the driver's callbacks too: one
head write, no worker thread (``Store.put_inline_async``), when the lease and
the key's lock can be had without waiting; else, or when that write fails,
the worker thread stores it as any other.
Writes borrow the server's shared writer lease (:mod:`.shared_lease`). A
PUT's preconditions are checked before its body is read (a stale ETag costs
no upload) and again just before its head write, under the key's
in-process lock (:mod:`.head_locks`), which a DELETE of the key takes too
(and checks its own preconditions under).

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
body may not have been read). A GET whose restore fails after the headers
went out (a block found damaged mid-file) can only be cut short: the client
sees fewer bytes than Content-Length, the log has this module's line and
uvicorn's "ASGI callable returned without completing response".
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO, TypeVar

from cassandra import OperationTimedOut
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from casstor_ops.errors import NotFoundError
from casstor_ops.serve.auth import Token
from casstor_ops.serve.content_cache import ContentCache
from casstor_ops.serve.head_locks import HeadLocks
from casstor_ops.serve.keys import parse_key
from casstor_ops.serve.metrics import CONTENT_TYPE, Metrics, Recorder
from casstor_ops.serve.ranges import Unsatisfiable, parse_range
from casstor_ops.serve.shared_lease import SharedLease
from casstor_ops.serve.status import ADVICE, RETRY_AFTER_S, BodyTooLarge, LengthRequired, Status, status_of
from casstor_ops.serve.streams import BODY_TIMEOUT_S, BodyReader, BodyWriter
from casstor_ops.serve.validators import WritePrecondition, etag, file_headers, not_modified
from casstor_ops.store.api import FileInfo, Store, StoreResult, check_id
from casstor_ops.store.coordination.leases import WriterLease

log = logging.getLogger("casstor.serve")

READ_THREADS = 16
WRITE_THREADS = 4
SMALL_BODY_BYTES = 1 << 20  # the default chunker's largest block: a body of at most one block's worth
# PUTs whose first MiB (a small body whole) is read and held at once, at most (64 MiB): the others wait.
SMALL_BODIES_HELD = 64
READ_METHODS = ("GET", "HEAD")
WRITE_METHODS = ("PUT", "DELETE")
METRICS_PATH = b"/metrics"

T = TypeVar("T")


@dataclass(frozen=True)
class Policy:
    """What requests the server accepts: the token (None: none needed), read-only, the PUT body limits."""

    token: Token | None = None
    read_only: bool = False
    max_body: int | None = None       # bytes; None: no limit
    require_length: bool = False      # 411 for a PUT without Content-Length
    body_timeout_s: float = BODY_TIMEOUT_S  # a PUT's whole body arrives within this, or 408


class Handlers:
    """The server's handlers and the worker pools they run store calls on; ``close()`` when the server stopped."""

    def __init__(self, store: Store, leases: SharedLease, policy: Policy, metrics: Metrics, cache: ContentCache,
                 worker: int = 0) -> None:
        self._store = store
        self._cache = cache
        self._leases = leases
        self._policy = policy
        self._metrics = metrics
        self.recorder: Recorder = metrics.recorder(worker)
        self._allowed = READ_METHODS if policy.read_only else READ_METHODS + WRITE_METHODS
        self._reads = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="casstor-serve-read")
        self._writes = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="casstor-serve-write")
        self._small_bodies = asyncio.Semaphore(SMALL_BODIES_HELD)
        self.head_locks = HeadLocks()

    def close(self) -> None:
        self._reads.shutdown(cancel_futures=True)
        self._writes.shutdown(cancel_futures=True)

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
                return await self._put(request, key)
            if request.method == "DELETE":
                return await self._delete(request, key)
            return await self._get(request, key, send_body=request.method == "GET")
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

    async def _run(self, pool: ThreadPoolExecutor, call: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, call, *args)

    def _write(self, action: Callable[..., T]) -> T:
        """Run a store write (on a worker thread) under the shared writer lease."""
        with self._leases.hold() as lease:
            return action(lease=lease)

    def _check_length(self, content_length: str | None) -> None:
        """411/413 from the request's Content-Length, before a byte of the body is read."""
        if content_length is None:
            if self._policy.require_length:
                raise LengthRequired("a PUT needs a Content-Length here (no chunked body)")
            return
        if self._policy.max_body is not None and int(content_length) > self._policy.max_body:
            raise BodyTooLarge(f"the body ({content_length} bytes) is longer than the server accepts "
                               f"({self._policy.max_body} bytes)")

    def _current_etag(self, key: str) -> str | None:
        """The ETag of ``key``'s committed head; None when there is none."""
        try:
            return etag(self._store.stat(key).hash)
        except NotFoundError:
            return None

    async def _put(self, request: Request, key: str) -> Response:
        check_id(key, storing=True)  # before the lease and before a byte of the body is read
        self._check_length(request.headers.get("content-length"))  # the server refuses a malformed one
        condition = WritePrecondition.of(request.headers.get("if-match"), request.headers.get("if-none-match"))
        if condition is not None:
            condition.check(await self._run(self._reads, self._current_etag, key), key)  # a stale ETag: no upload
        reader = BodyReader(request.stream(), asyncio.get_running_loop(), limit=self._policy.max_body,
                            deadline_s=self._policy.body_timeout_s)
        async with self._small_bodies:
            # The first MiB (a small body whole) is read here: a slow client holds no write thread meanwhile.
            source: BinaryIO = reader
            if await reader.read_ahead(SMALL_BODY_BYTES):
                body = reader.held()
                result = await self._put_inline(body, key) if condition is None else None
                if result is not None:
                    return JSONResponse(result.as_dict(), headers={"etag": etag(result.hash)})
                source = io.BytesIO(body)  # seekable: the store can re-read a block that vanished meanwhile
            result = await self._run(self._writes, self._write, partial(self._put_body, source, key, condition))
        return JSONResponse(result.as_dict(), headers={"etag": etag(result.hash)})

    async def _put_inline(self, body: bytes, key: str) -> StoreResult | None:
        """An unconditional PUT of a file the store keeps inline, committed on the driver's callbacks: one head
        write, no worker thread. None when it is not such a file, when the lease or the key's lock cannot be
        had without waiting, or when the write failed: then the worker thread stores it, which waits for both,
        retries, and gives the status that applies. A write that got no answer within the driver's request
        timeout is raised instead (503): the client has waited that long already, and a node that did not
        answer one write will not answer the worker's first request either (measured with the node frozen:
        60 s to the 503 with a second try, 30 s without; ``tests/test_serve_faults.py``)."""
        if not self._store.keeps_inline(len(body)):
            return None
        with self._leases.hold_if_fresh() as lease, self.head_locks.turn(key) as turn:
            if lease is None or not turn.take_now():
                return None
            try:
                return await _answered(partial(self._store.put_inline_async, body, key, lease))
            except OperationTimedOut:
                raise
            except Exception:  # noqa: BLE001 - raised at once (a lapsed lease) or answered: the careful path decides
                return None

    def _put_body(self, source: BinaryIO, key: str, condition: WritePrecondition | None,
                  lease: WriterLease) -> StoreResult:
        """The store call of a PUT (worker thread): the precondition is checked again just before the head write."""
        def check() -> None:
            if condition is not None:
                condition.check(self._current_etag(key), key)

        with self.head_locks.turn(key) as turn:
            return self._store.put(source, key, lease=lease, before_commit=turn.then(check))

    async def _delete(self, request: Request, key: str) -> Response:
        check_id(key)
        condition = WritePrecondition.of(request.headers.get("if-match"), request.headers.get("if-none-match"))
        removed = await self._run(self._writes, self._write, partial(self._remove, key, condition))
        return JSONResponse(removed.as_dict())

    def _remove(self, key: str, condition: WritePrecondition | None, lease: WriterLease) -> FileInfo:
        """The store call of a DELETE (worker thread), under the key's lock: its precondition is checked there (a
        client deleting the version it saw never deletes a newer one), and it never lands between a conditional
        PUT's check and its head write, which would write the head again."""
        with self.head_locks.holding(key):
            if condition is not None:
                condition.check(self._current_etag(key), key)
            return self._store.remove(key, lease=lease)

    async def _get(self, request: Request, key: str, send_body: bool) -> Response:
        head = await self._stat(key)
        headers = {**file_headers(head), "accept-ranges": "bytes"}
        if not_modified(request.headers.get("if-none-match"), headers["etag"]):
            return Response(status_code=304, headers=headers)
        try:
            wanted = parse_range(request.headers.get("range"), head.size) if send_body else None
        except Unsatisfiable:
            return Response(status_code=416, headers={"content-range": f"bytes */{head.size}"})
        start, stop = (0, head.size) if wanted is None else (wanted.start, wanted.stop)
        headers["content-length"] = str(stop - start)
        if wanted is not None:
            headers["content-range"] = wanted.content_range(head.size)
        if not send_body:
            return Response(status_code=200, headers=headers)
        status = 200 if wanted is None else 206
        if head.size <= SMALL_BODY_BYTES:
            content = await self._small_content(head)
            return Response(content[start:stop], status_code=status, headers=headers)
        loop = asyncio.get_running_loop()
        # Cut short only a range that ends before the file does: a whole file gets its file-hash check.
        writer = BodyWriter(loop, start, stop if stop < head.size else None)
        loop.run_in_executor(self._reads, writer.fill, partial(self._store.read, head))
        try:
            first = await writer.next()  # a failure before the first byte still gets its own status
        except BaseException:
            writer.close()
            raise
        return StreamingResponse(self._rest(writer, first, key), status_code=status, headers=headers)

    async def _stat(self, key: str) -> FileInfo:
        """The head of ``key``, read without a worker thread."""
        return await _answered(partial(self._store.stat_async, key))

    async def _small_content(self, head: FileInfo) -> bytes:
        """The whole content of the small file ``head`` names, every block and the file hash checked: from the
        cache, else read on the driver's callbacks, else (any doubt there) on a worker thread; then kept."""
        content = self._cache.get(head.hash)
        self.recorder.cache(content is not None)
        if content is None:
            content = await _answered(lambda done: self._store.read_small_async(head, partial(done, error=None)))
            if content is None:
                content = await self._run(self._reads, self._read_whole, head)
            self._cache.put(head.hash, content)
        return content

    def _read_whole(self, head: FileInfo) -> bytes:
        out = io.BytesIO()
        self._store.read(head, out)
        return out.getvalue()

    async def _rest(self, writer: BodyWriter, first: bytes | None, key: str) -> AsyncIterator[bytes]:
        """The response body: ``first``, then the worker's chunks until its end."""
        try:
            chunk = first
            while chunk is not None:
                yield chunk
                chunk = await writer.next()
        except Exception as err:
            log.error("GET %r: cut short after the headers: %s: %s", key, type(err).__name__, _one_line(err))
            self.recorder.error(status_of(err).kind)
            raise _CutShort() from err
        finally:
            writer.close()  # a client that went away stops the restore

    def _failure(self, method: str, key: str | None, err: Exception) -> Response:
        """The response to a failed request, logged as one line and counted."""
        if isinstance(err, ClientDisconnect):
            log.warning("%s %r: the client disconnected before the end of its body; nothing stored", method, key)
            self.recorder.error("client_gone")
            return PlainTextResponse("incomplete body\n", 400)
        status = status_of(err)
        self.recorder.error(status.kind)
        if status.code == 500:
            log.error("%s %r -> 500 (a bug): %s: %s", method, key, type(err).__name__, _one_line(err))
            log.debug("traceback of the 500", exc_info=err)
            return PlainTextResponse("internal error\n", 500)
        log.warning("%s %r -> %d: %s", method, key, status.code, _one_line(err))
        return PlainTextResponse(f"{ADVICE.get(status.kind, _one_line(err))}\n", status.code, _retry_after(status))


async def _answered(start: Callable[[Callable[[T | None, Exception | None], None]], None]) -> T:
    """What ``start(done)`` answers through ``done(value, error)``, called once on the driver's thread: it
    resolves a future of this loop, so no worker thread waits for the driver."""
    loop = asyncio.get_running_loop()
    answer = loop.create_future()

    def done(value: T | None, error: Exception | None) -> None:
        try:
            loop.call_soon_threadsafe(_resolve, answer, value, error)
        except RuntimeError:  # the loop closed meanwhile (the server stopped): nobody waits for it
            pass

    start(done)
    return await answer


def _resolve(answer: asyncio.Future, value: object, error: Exception | None) -> None:
    if answer.cancelled():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(value)


class _CutShort(Exception):
    """A response body that failed after its headers went out (already logged): the connection is dropped."""


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


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
        except _CutShort:
            # Returning with the response unfinished makes uvicorn drop the connection with a one-line
            # error, where raising would log a traceback of what _rest already logged.
            return
        except asyncio.CancelledError:  # the grace time after SIGTERM is over: dropped, as above
            log.warning("%s %r: response cut short: the server stopped (grace time over)", request.method,
                        scope["raw_path"])
            handlers.recorder.error("shutdown")

    return app
