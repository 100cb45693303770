"""The request handlers: PUT, GET, HEAD and DELETE of ``/<key>`` on one :class:`~casstor_ops.store.api.Store`.

=======  =================================================================
PUT      store the body under the key (200, the store's JSON result:
         ``{"id","bytes","blocks","new_blocks","new_bytes","seconds"}``)
GET      the content (200), or one range of it (206); ETag, Last-Modified,
         Content-Length; ``If-None-Match`` naming the ETag: 304
HEAD     the headers of GET, no body
DELETE   remove the file (200, its last head as JSON); its blocks stay until reclaim
=======  =================================================================

Each store call blocks (it drives the driver's futures on its own thread),
so it runs on a bounded worker pool (``WRITE_THREADS`` for PUT and DELETE,
``READ_THREADS`` for GET, HEAD): a write holds an upload's worth of memory,
so fewer run at once. Bodies are streamed both ways (:mod:`.streams`).
Writes borrow the server's shared writer lease (:mod:`.shared_lease`).

Example::

    >>> app = build_app(Handlers(store, SharedLease(store.session), token=None, read_only=False))  # doctest: +SKIP

Failures: every error is answered with the status of :mod:`.status`, a
one-line text body (``internal error`` for a bug: no traceback reaches the
client) and one log line naming the method, key and cause. A 401 (no or
a wrong token when one is required) and a 405 (another method, or a write to
a read-only server) come before the key is even decoded. A GET whose restore
fails after the headers went out (a block found damaged mid-file) can only
be cut short: the client sees fewer bytes than Content-Length, the log has
this module's line and uvicorn's "ASGI callable returned without completing
response".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from casstor_ops.serve.auth import Token
from casstor_ops.serve.keys import parse_key
from casstor_ops.serve.ranges import Unsatisfiable, parse_range
from casstor_ops.serve.shared_lease import SharedLease
from casstor_ops.serve.status import status_of
from casstor_ops.serve.streams import BodyReader, BodyTimeout, BodyWriter
from casstor_ops.serve.validators import file_headers, not_modified
from casstor_ops.store.api import Store, check_id

log = logging.getLogger("casstor.serve")

READ_THREADS = 16
WRITE_THREADS = 4
READ_METHODS = ("GET", "HEAD")
WRITE_METHODS = ("PUT", "DELETE")

T = TypeVar("T")


class Handlers:
    """The server's handlers and the worker pools they run store calls on; ``close()`` when the server stopped."""

    def __init__(self, store: Store, leases: SharedLease, token: Token | None, read_only: bool) -> None:
        self._store = store
        self._leases = leases
        self._token = token
        self._allowed = READ_METHODS if read_only else READ_METHODS + WRITE_METHODS
        self._reads = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="casstor-serve-read")
        self._writes = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="casstor-serve-write")

    def close(self) -> None:
        self._reads.shutdown(cancel_futures=True)
        self._writes.shutdown(cancel_futures=True)

    async def handle(self, request: Request) -> Response:
        """Answer one request (every path and method comes here)."""
        if self._token is not None and not self._token.allows(request.headers.get("authorization")):
            # The raw path, as repr: whatever a client puts in it stays on one log line.
            log.warning("%s %r -> 401: no or wrong bearer token", request.method, request.scope["raw_path"])
            return PlainTextResponse("a bearer token is required\n", 401, {"www-authenticate": "Bearer"})
        if request.method not in self._allowed:
            return PlainTextResponse(f"{request.method} is not allowed here\n", 405,
                                     {"allow": ", ".join(self._allowed)})
        key = None
        try:
            key = parse_key(request.scope["raw_path"])
            if request.method == "PUT":
                return await self._put(request, key)
            if request.method == "DELETE":
                return await self._delete(key)
            return await self._get(request, key, send_body=request.method == "GET")
        except Exception as err:  # every failure becomes a status and one log line (a bug: 500)
            return _failure(request.method, key, err)

    async def _run(self, pool: ThreadPoolExecutor, call: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, call, *args)

    def _write(self, action: Callable[..., T]) -> T:
        """Run a store write (on a worker thread) under the shared writer lease."""
        with self._leases.hold() as lease:
            return action(lease=lease)

    async def _put(self, request: Request, key: str) -> Response:
        check_id(key, storing=True)  # before the lease and before a byte of the body is read
        reader = BodyReader(request.stream(), asyncio.get_running_loop())
        result = await self._run(self._writes, self._write, partial(self._store.put, reader, key))
        return JSONResponse(result.as_dict())

    async def _delete(self, key: str) -> Response:
        check_id(key)
        removed = await self._run(self._writes, self._write, partial(self._store.remove, key))
        return JSONResponse(removed.as_dict())

    async def _get(self, request: Request, key: str, send_body: bool) -> Response:
        head = await self._run(self._reads, self._store.stat, key)
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
        loop = asyncio.get_running_loop()
        # Cut short only a range that ends before the file does: a whole file gets its file-hash check.
        writer = BodyWriter(loop, start, stop if stop < head.size else None)
        loop.run_in_executor(self._reads, writer.fill, partial(self._store.read, head))
        try:
            first = await writer.next()  # a failure before the first byte still gets its own status
        except BaseException:
            writer.close()
            raise
        return StreamingResponse(_rest(writer, first, key), status_code=200 if wanted is None else 206,
                                 headers=headers)


class _CutShort(Exception):
    """A response body that failed after its headers went out (already logged): the connection is dropped."""


async def _rest(writer: BodyWriter, first: bytes | None, key: str) -> AsyncIterator[bytes]:
    """The response body: ``first``, then the worker's chunks until its end."""
    try:
        chunk = first
        while chunk is not None:
            yield chunk
            chunk = await writer.next()
    except Exception as err:
        log.error("GET %r: cut short after the headers: %s: %s", key, type(err).__name__, _one_line(err))
        raise _CutShort() from err
    finally:
        writer.close()  # a client that went away stops the restore


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def _failure(method: str, key: str | None, err: Exception) -> Response:
    """The response to a failed request, logged as one line."""
    if isinstance(err, ClientDisconnect):
        log.warning("%s %r: the client disconnected before the end of its body; nothing stored", method, key)
        return PlainTextResponse("incomplete body\n", 400)
    if isinstance(err, BodyTimeout):
        log.warning("%s %r -> 408: %s; nothing stored", method, key, _one_line(err))
        return PlainTextResponse(f"{err}\n", 408)
    status = status_of(err)
    if status.code == 500:
        log.error("%s %r -> 500 (a bug): %s: %s", method, key, type(err).__name__, _one_line(err))
        log.debug("traceback of the 500", exc_info=err)
        return PlainTextResponse("internal error\n", 500)
    log.warning("%s %r -> %d: %s", method, key, status.code, _one_line(err))
    headers = {"retry-after": str(status.retry_after)} if status.retry_after is not None else None
    return PlainTextResponse(f"{_one_line(err)}\n", status.code, headers)


def build_app(handlers: Handlers) -> ASGIApp:
    """The ASGI application: every request, whatever its path and method, goes to ``handlers.handle``.

    No router: the key is the whole path, and a router's own 404 and 405
    would answer before the token is checked.
    """
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await handlers.handle(Request(scope, receive))
        try:
            await response(scope, receive, send)
        except _CutShort:
            # Returning with the response unfinished makes uvicorn drop the connection with a one-line
            # error, where raising would log a traceback of what _rest already logged.
            return

    return app
