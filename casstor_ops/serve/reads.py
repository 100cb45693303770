"""GET and HEAD of ``/<key>``: :class:`Reads`, with the content cache and the read pool.

=======  =================================================================
GET      the content (200), or one range of it (206); ETag, Last-Modified,
         Content-Length; ``If-None-Match`` naming the ETag: 304
HEAD     the headers of GET, no body
=======  =================================================================

A GET or HEAD reads the file's head without a thread: the driver's answer
resolves a future of the event loop (:meth:`Store.callbacks.stat_async
<casstor_ops.store.engine.callbacks.StoreCallbacks.stat_async>`, :mod:`.bridge`).
Reading content blocks (it drives the driver's futures on its own thread),
so it runs on a bounded worker pool (``READ_THREADS``), and the body is
streamed (:mod:`.streams`), except a small one (at most ``SMALL_BODY_BYTES``):
a GET of such a file is answered in one piece, its content read whole by
one worker call (no per-chunk hand-offs between the worker and the event
loop) and kept in the :mod:`.content_cache` by its file hash, so the next
GET of that content reads only the head. A small file missing from the
cache is first read on the driver's callbacks too
(``Store.callbacks.read_small_async``); at any doubt there, by a worker.

Example::

    >>> reads = Reads(store, ContentCache(1 << 28, 1 << 20), metrics.recorder(0))  # doctest: +SKIP
    >>> response = await reads.get(request, "photos/a.jpg", send_body=True)        # doctest: +SKIP

Failures: raised before the headers go out, for the dispatcher (:mod:`.app`)
to answer (a bad key 400, an unknown file 404, a damaged block 502, the
store's errors: :mod:`.status`). A GET whose restore fails after the headers
went out (a block found damaged mid-file) can only be cut short: the error is
logged here and counted, and :class:`CutShort` raised, on which the
application drops the connection; the client sees fewer bytes than
Content-Length, the log has this module's line and uvicorn's "ASGI callable
returned without completing response".
"""

from __future__ import annotations

import asyncio
import io
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.serve.bridge import answered, on_pool
from casstor_ops.serve.content_cache import ContentCache
from casstor_ops.serve.metrics import Recorder
from casstor_ops.serve.ranges import ByteRange, Unsatisfiable, parse_range
from casstor_ops.serve.status import one_line, status_of
from casstor_ops.serve.streams import SMALL_BODY_BYTES, BodyWriter
from casstor_ops.serve.validators import file_headers, not_modified
from casstor_ops.store.api import FileInfo, Store
from casstor_ops.store.history.points_in_time import parse_time, parse_version

log = logging.getLogger("casstor.serve")

READ_THREADS = 16


def wanted_version(query: Mapping[str, str]) -> tuple[uuid.UUID | None, datetime | None]:
    """A GET's ``version`` or ``at`` (not both): CasstorError (400) for a bad value or both given.

    Example::

        >>> wanted_version({"at": "2026-11-26T14:00:00"})
        (None, datetime.datetime(2026, 11, 26, 14, 0, tzinfo=datetime.timezone.utc))
    """
    version, at = query.get("version"), query.get("at")
    if version is not None and at is not None:
        raise CasstorError("give ?version= or ?at=, not both", EXIT_USAGE)
    return (parse_version(version) if version is not None else None,
            parse_time(at) if at is not None else None)


class CutShort(Exception):
    """A response body that failed after its headers went out (already logged): the connection is dropped."""


class Reads:
    """GET and HEAD on one store (see the module docstring); ``close()`` when the server stopped."""

    def __init__(self, store: Store, cache: ContentCache, recorder: Recorder) -> None:
        self._store = store
        self._cache = cache
        self._recorder = recorder
        self.pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="casstor-serve-read")

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)

    async def get(self, request: Request, key: str, send_body: bool) -> Response:
        """Answer a GET of ``key`` (a HEAD: not ``send_body``); ``?version=V`` or ``?at=TIME``: that version."""
        head = await self.stat(key, *wanted_version(request.query_params))
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
        return await self.content(head, wanted, headers, key)

    async def content(self, head: FileInfo, wanted: ByteRange | None, headers: dict[str, str],
                      key: str) -> Response:
        """The 200 (or, for a range ``wanted``, 206) with the content of the version ``head`` and ``headers``: a small
        file in one piece (from the content cache), a larger one streamed from a read thread."""
        start, stop = (0, head.size) if wanted is None else (wanted.start, wanted.stop)
        status = 200 if wanted is None else 206
        if head.size <= SMALL_BODY_BYTES:
            content = await self.small_content(head)
            return Response(content[start:stop], status_code=status, headers=headers)
        loop = asyncio.get_running_loop()
        # Cut short only a range that ends before the file does: a whole file gets its file-hash check.
        writer = BodyWriter(loop, start, stop if stop < head.size else None)
        loop.run_in_executor(self.pool, writer.fill, partial(self._store.read, head))
        try:
            first = await writer.next()  # a failure before the first byte still gets its own status
        except BaseException:
            writer.close()
            raise
        return StreamingResponse(self._rest(writer, first, key), status_code=status, headers=headers)

    async def stat(self, key: str, version: uuid.UUID | None = None, at: datetime | None = None) -> FileInfo:
        """The head of ``key`` (or the version ``version``, or its head at ``at``), read without a worker thread."""
        return await answered(partial(self._store.callbacks.stat_async, key, version=version, at=at))

    async def small_content(self, head: FileInfo) -> bytes:
        """The whole content of the small file ``head`` names, every block and the file hash checked: from the
        cache, else read on the driver's callbacks, else (any doubt there) on a worker thread; then kept."""
        content = self._cache.get(head.hash)
        self._recorder.cache(content is not None)
        if content is None:
            calls = self._store.callbacks
            content = await answered(lambda done: calls.read_small_async(head, partial(done, error=None)))
            if content is None:
                content = await on_pool(self.pool, self._read_whole, head)
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
            log.error("GET %r: cut short after the headers: %s: %s", key, type(err).__name__, one_line(err))
            self._recorder.error(status_of(err).kind)
            raise CutShort() from err
        finally:
            writer.close()  # a client that went away stops the restore
