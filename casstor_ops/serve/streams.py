"""Bodies between the event loop and the worker thread that runs a blocking store call.

The store's ``put`` reads a file object and its ``read`` writes one, on the
calling thread, driving the driver's futures themselves
(:class:`~casstor_ops.store.cql.request_queue.RequestQueue`); the server runs each
such call on a worker thread and bridges its file object to the ASGI body:

* :class:`BodyReader` (PUT): a non-seekable raw reader whose ``readinto``
  asks the event loop for the request's next chunk and waits for it. Nothing
  is spooled: the store holds what it holds for any stream (as for
  ``casstor store --stdin``, bounded by the upload's held-bytes limit), and the
  client is not read faster than the store takes the bytes. The first bytes
  (a small body whole) are read on the event loop first
  (:meth:`BodyReader.read_ahead`), so a slow client holds no worker thread
  while it sends them.
* :class:`BodyWriter` (GET): ``write`` hands each verified block to the
  event loop through a queue of at most ``queued`` chunks (the worker waits
  when the client is slow); :meth:`BodyWriter.next` is the response side.
  A range's bytes only are queued, and the restore is stopped once the
  range is complete.

Example::

    >>> reader = BodyReader(request.stream(), loop)                          # doctest: +SKIP
    >>> await loop.run_in_executor(pool, store.put, reader, key)             # doctest: +SKIP
    >>> writer = BodyWriter(loop)                                            # doctest: +SKIP
    >>> loop.run_in_executor(pool, writer.fill, lambda out: store.read(head, out))  # doctest: +SKIP
    >>> first = await writer.next()                                          # doctest: +SKIP

Failures: a client that sends nothing for ``idle_timeout_s``, or whose
whole body has not arrived by ``deadline_s`` after the request began, makes
``readinto`` (or ``read_ahead``) raise :class:`BodyTimeout` (408), one whose body grows past
``limit`` bytes :class:`~casstor_ops.serve.status.BodyTooLarge` (413) (neither
is an OSError, so the store does not take them for an unreadable source,
and it commits nothing and releases its claims); a client that disconnects raises
Starlette's ``ClientDisconnect`` from ``readinto`` (the store then commits
nothing). A response closed early (:meth:`BodyWriter.close`: the client went
away) makes the worker's next ``write`` raise :class:`ResponseClosed`, which
stops the restore; so does a client that takes no chunk for the idle timeout
(the response is cut short, the read thread freed). The worker's own error is
raised by :meth:`BodyWriter.next`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from casstor_ops.serve.policy import BODY_TIMEOUT_S
from casstor_ops.serve.status import BodyTooLarge, HttpError, Status

IDLE_TIMEOUT_S = 60.0
SMALL_BODY_BYTES = 1 << 20  # the default chunker's largest block: a body of at most one block's worth is not streamed
QUEUED_CHUNKS = 8      # blocks of at most chunk_max (1 MiB by default) each between the worker and the socket
POLL_S = 0.5           # how often a waiting worker looks whether the response was closed


class BodyTimeout(HttpError):
    """The client sent no byte of its body for the idle timeout."""

    status = Status(408, kind="body_timeout")


class ResponseClosed(Exception):
    """The response was closed before the worker finished (the client went away)."""


class _RangeSent(Exception):
    """The range's last byte is queued: the rest of the file is not needed."""


@dataclass(frozen=True)
class _End:
    error: BaseException | None


class BodyReader(io.RawIOBase):
    """A request body as a blocking, non-seekable reader, for a worker thread."""

    def __init__(self, chunks: AsyncIterator[bytes], loop: asyncio.AbstractEventLoop,
                 idle_timeout_s: float = IDLE_TIMEOUT_S, limit: int | None = None,
                 deadline_s: float = BODY_TIMEOUT_S) -> None:
        super().__init__()
        self._chunks = aiter(chunks)
        self._loop = loop
        self._idle_timeout_s = idle_timeout_s
        self._deadline_s = deadline_s
        self._ends = time.monotonic() + deadline_s
        self._limit = limit
        self._pending = memoryview(b"")
        self._received = 0
        self.eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        while not self._pending and not self.eof:
            self._pending = memoryview(self._counted(self._next_chunk()))
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def _counted(self, chunk: bytes) -> bytes:
        self._received += len(chunk)
        if self._limit is not None and self._received > self._limit:
            raise BodyTooLarge(f"the body is longer than the server accepts ({self._limit} bytes)")
        return chunk

    async def read_ahead(self, size: int | None = None) -> bool:
        """Read the body on the event loop until it ends (True) or ``size`` bytes are held (False); ``readinto``
        returns the held bytes first. A slow client thus holds no worker thread for its first ``size`` bytes
        (for a small body, none at all, and no hand-off to a worker per chunk); the same timeouts and limit."""
        chunks = [bytes(self._pending)]
        held = len(chunks[0])
        while not self.eof and (size is None or held < size):
            wait_s = self._wait_s()
            try:
                chunk = self._counted(await asyncio.wait_for(self._receive(), wait_s))
            except asyncio.TimeoutError:
                raise self._timeout(wait_s) from None
            chunks.append(chunk)
            held += len(chunk)
        self._pending = memoryview(b"".join(chunks))
        return self.eof

    async def read_all(self) -> bytes:
        """The whole body, read on the event loop (see :meth:`read_ahead`)."""
        await self.read_ahead()
        return self.held()

    def held(self) -> bytes:
        """The bytes read ahead and not yet returned by ``readinto``."""
        return bytes(self._pending)

    @property
    def held_bytes(self) -> int:
        """How many bytes :meth:`held` would return."""
        return len(self._pending)

    def _wait_s(self) -> float:
        """How long to wait for the next chunk: the idle timeout, or less when the body's deadline comes first."""
        return max(0.0, min(self._idle_timeout_s, self._ends - time.monotonic()))

    def _timeout(self, waited_s: float) -> BodyTimeout:
        """The 408 of a wait of ``waited_s`` that timed out: named by the limit that bounded the wait."""
        # Not by reading the clock again: uvloop's timers fire up to a millisecond early (measured: 14 waits in
        # 200), which read as the idle timeout a deadline that had ended the wait.
        if waited_s < self._idle_timeout_s:
            return BodyTimeout(f"the body did not arrive within {self._deadline_s:g} s")
        return BodyTimeout(f"the client sent nothing for {self._idle_timeout_s:g} s")

    def _next_chunk(self) -> bytes:
        future = asyncio.run_coroutine_threadsafe(self._receive(), self._loop)
        wait_s = self._wait_s()
        try:
            return future.result(timeout=wait_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise self._timeout(wait_s) from None

    async def _receive(self) -> bytes:
        try:
            return await anext(self._chunks)
        except StopAsyncIteration:
            self.eof = True
            return b""


class BodyWriter:
    """A write-only file object for a worker thread whose bytes become a response body on the event loop.

    ``start``/``stop``: only the file's bytes from ``start`` up to ``stop``
    are sent; with a ``stop`` before the end, the worker is stopped once
    they are (each block's own check is not skipped, nor the block list's
    against the file hash, which comes before the first byte).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, start: int = 0, stop: int | None = None,
                 queued: int = QUEUED_CHUNKS, idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        self._loop = loop
        self._idle_timeout_s = idle_timeout_s
        self._queue: asyncio.Queue[bytes | _End] = asyncio.Queue()
        self._slots = threading.Semaphore(queued)
        self._closed = threading.Event()
        self._start = start
        self._stop = stop
        self._position = 0

    def write(self, data: bytes) -> int:
        begin = self._position
        self._position += len(data)
        wanted = data[max(0, self._start - begin):len(data) if self._stop is None else max(0, self._stop - begin)]
        if wanted:
            self._put(bytes(wanted))
        if self._stop is not None and self._position >= self._stop:
            raise _RangeSent()
        return len(data)

    def _put(self, chunk: bytes) -> None:
        gives_up = time.monotonic() + self._idle_timeout_s
        while not self._slots.acquire(timeout=POLL_S):
            if time.monotonic() > gives_up:  # a client too slow to read: its read thread serves others
                self._closed.set()
            if self._closed.is_set():
                raise ResponseClosed("the response was closed")
        if self._closed.is_set():
            raise ResponseClosed("the response was closed")
        self._loop.call_soon_threadsafe(self._queue.put_nowait, chunk)

    def fill(self, produce: Callable[["BodyWriter"], object]) -> None:
        """Run ``produce(self)`` (on the worker thread); its end, or its error, is queued after its bytes."""
        error: BaseException | None = None
        try:
            produce(self)
        except _RangeSent:
            pass
        except BaseException as err:  # handed to the event loop, which answers or aborts the response
            error = err
        self._loop.call_soon_threadsafe(self._queue.put_nowait, _End(error))

    async def next(self) -> bytes | None:
        """The next chunk; None at the end; the worker's error if it failed."""
        item = await self._queue.get()
        if isinstance(item, _End):
            if item.error is not None:
                raise item.error
            return None
        self._slots.release()
        return item

    def close(self) -> None:
        """Stop the worker at its next write (the response is not being sent any more)."""
        self._closed.set()
