"""Fresh reads, shared: concurrent requests for one row wait on one read sent after each of them asked.

A handler that must act on a row as it is now (an S3 write's bucket row:
its owner, its versioning state, that it still exists) reads it after the
request came in. Twenty concurrent PUTs into one bucket made twenty reads of
the same row, one a PUT; shared, 0.27 a PUT, and the node's CPU a 64 KiB S3
PUT went from 1.63 to 1.31 ms (docs/benchmarks.md). Here a key has at most
one read in flight (``read``, an async function of the key); a caller that
asks meanwhile waits for the *next* read, sent once the current one is
answered, with every other caller that asked in between. So each caller gets
an answer no older than a read of its own would have been (the read was sent
after it asked), and a key under load costs one read per round trip instead
of one per request.

Example::

    >>> rows = FreshReads(read_bucket_row)      # doctest: +SKIP
    >>> row = await rows.get("photos")          # doctest: +SKIP

Failures: the read's error is raised to every caller that shared it; the
next caller starts a new read. A cancelled caller leaves the read to the
others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class FreshReads(Generic[K, T]):
    """``read(key)`` shared by the callers of :meth:`get` that wait for one key at once (one event loop)."""

    def __init__(self, read: Callable[[K], Awaitable[T]]) -> None:
        self._read = read
        self._waiting: dict[K, list[asyncio.Future[T]]] = {}  # callers whose read is not sent yet
        # Keys with a read in flight, and the task that reads (held here: the loop keeps only a weak reference).
        self._reading: dict[K, asyncio.Task[None]] = {}

    async def get(self, key: K) -> T:
        """``key``'s value from a read sent after this call began."""
        answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(answer)
        reading = self._reading.get(key)
        if reading is None or reading.done():  # done here: cancelled before it began, as the loop stops
            self._reading[key] = asyncio.get_running_loop().create_task(self._serve(key))
        return await answer

    async def _serve(self, key: K) -> None:
        """Read for the callers that are waiting, again while more came during the read."""
        try:
            while callers := self._waiting.pop(key, None):
                await self._answer(key, callers)
        finally:
            self._reading.pop(key)  # cancelled with callers still waiting (the loop stops): a later get reads anew

    async def _answer(self, key: K, callers: list[asyncio.Future[T]]) -> None:
        try:
            value = await self._read(key)
        except asyncio.CancelledError:
            for answer in callers:
                answer.cancel()
            raise
        except Exception as error:  # every caller that shared this read raises it
            for answer in callers:
                if not answer.done():
                    answer.set_exception(error)
        else:
            for answer in callers:
                if not answer.done():
                    answer.set_result(value)
