"""A group commit of the server's small unconditional PUTs: every PUT waiting is stored in one batch.

A 64 KiB PUT stored alone (``Store.put`` on a write thread) is about six
requests to the node: the existence check, a claim, the content, the index
row, the block list, the head (and its directory entry). The raw driver
writes the same bytes in one. :class:`GroupCommit` takes the PUTs whose
whole body was read on the event loop (at most ``SMALL_BODY_BYTES``) with no
``If-Match`` / ``If-None-Match``, in a store that does not keep them inline
(the plain PUT's, and the S3 PutObject's with their object attributes:
:mod:`.s3.objects`),
and stores them together with one :meth:`~casstor_ops.store.api.Store.put_many`
(:mod:`casstor_ops.store.engine.batch_upload`: each step once for the whole batch,
in the commit order of ``docs/safety.md``) on its own thread, then answers
each request with its own result (its JSON and ETag as a lone store gives).
A PUT may hand over its body still to be *prepared* (:class:`Waiting`'s
``prepare``): the S3 PutObject's body is digested (its MD5, the ETag) and
checked against the request's digests on the group's thread, beside the
batch's own hashing, not on the event loop. There ``hashlib`` lets go of
the GIL while it digests, and the event loop, which would wait to take the
GIL back after each digest (the interpreter's 5 ms switch interval), runs
on. A body that fails its check fails its PUT only, nothing of it stored.

One batch is in flight at a time; it takes every PUT waiting when it starts
(at most ``GROUP_FILES`` files and about ``GROUP_BYTES`` bytes). No timer: a
PUT that finds nothing in flight starts a batch of itself at once, and the
PUTs that arrive while a batch is in flight form the next one. Two PUTs of
one key never go in one batch: the earlier (in the order the server finished
reading their bodies) goes, the later waits for the next batch, so its head is
written after the earlier one's is acknowledged and it wins, as two PUTs
sent one after the other. A batch holds the server's shared writer lease
(:mod:`.shared_lease`: the reclaim window and the fence as for any write) and
the in-process locks of all its keys (:mod:`.head_locks`), taken in key order,
for the whole store: a conditional PUT's check and head write or a DELETE of
one of them comes wholly before or after it.

Example::

    >>> group = GroupCommit(store, leases, HeadLocks())    # doctest: +SKIP
    >>> result = await group.put(b"hello", "a.txt")         # doctest: +SKIP
    >>> group.close()                                       # doctest: +SKIP

Failures: a file's own error (its preparation's, or a result of
``put_many``) fails its request only. An error of the whole batch (an
offline reclaim window: 503 with Retry-After; a lapsed lease; a write the
request queue gave up on; a bug) is raised by every request of that batch,
each answered with the status today's lone store gives for it
(:mod:`.status`); the next batch is tried afresh. A request cancelled while
it waits (the server's grace time over) is left out of the batch; one
cancelled while its batch is in flight may still be committed, as a lone
store on a write thread would be.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.head_locks import HeadLocks
from casstor_ops.serve.shared_lease import SharedLease
from casstor_ops.store.api import SmallFile, Store, StoreResult

# What one batch takes at most: the PUTs whose bodies the server holds at once (writes.SMALL_BODIES_HELD), and
# 32 MiB of bodies (a batch's blocks are all held in memory until its heads are written).
GROUP_FILES = 64
GROUP_BYTES = 32 << 20


@dataclass
class Waiting:
    """A PUT waiting for its batch: its key, its body's size, the future its request awaits, and ``prepare``, run on
    the group's thread: the file to store (an S3 PUT's body digested and checked there, with its object
    attributes); an exception it raises is this PUT's answer."""

    key: str
    size: int
    answer: asyncio.Future
    prepare: Callable[[], SmallFile]


def take_batch(waiting: Sequence[Waiting], max_files: int = GROUP_FILES,
               max_bytes: int = GROUP_BYTES) -> tuple[list[Waiting], list[Waiting]]:
    """The next batch from ``waiting`` (in arrival order) and the PUTs left waiting, in order: at most
    ``max_files`` PUTs and ``max_bytes`` bytes (the first PUT goes whatever its size), one PUT of a key at most, and
    never a PUT of a key after an earlier one of it was left waiting. A cancelled request is dropped.

    Example::

        >>> loop = asyncio.new_event_loop()
        >>> puts = [Waiting(k, 1, loop.create_future(), partial(SmallFile, k, b"x")) for k in ("a", "b", "a", "c")]
        >>> batch, left = take_batch(puts)
        >>> [p.key for p in batch], [p.key for p in left]
        (['a', 'b', 'c'], ['a'])
        >>> [p.key for p in take_batch(puts, max_files=1)[1]]
        ['b', 'a', 'c']
        >>> loop.close()
    """
    batch: list[Waiting] = []
    left: list[Waiting] = []
    seen: set[str] = set()
    size = 0
    for put in waiting:
        if put.answer.cancelled():
            continue
        if put.key in seen or len(batch) >= max_files or (batch and size + put.size > max_bytes):
            left.append(put)
        else:
            batch.append(put)
            size += put.size
        seen.add(put.key)
    return batch, left


class GroupCommit:
    """The group commit of one server process (see the module docstring); used from its event loop only."""

    def __init__(self, store: Store, leases: SharedLease, head_locks: HeadLocks) -> None:
        self._store = store
        self._leases = leases
        self._head_locks = head_locks
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="casstor-serve-group")
        self._waiting: list[Waiting] = []
        self._in_flight = False

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)

    async def put(self, body: bytes, key: str) -> StoreResult:
        """Store ``body`` under ``key`` in the next batch; its result, or the error that failed it."""
        return await self.put_prepared(key, len(body), partial(SmallFile, key, body))

    async def put_prepared(self, key: str, size: int, prepare: Callable[[], SmallFile]) -> StoreResult:
        """Store under ``key`` the file ``prepare`` makes on the group's thread (a body of about ``size`` bytes, an
        S3 object's attributes with it) in the next batch; its result, or the error that failed it (``prepare``'s
        own included).

        Example: ``await group.put_prepared("b/k", len(raw), lambda: SmallFile("b/k", raw, meta=meta))``."""
        put = Waiting(key, size, asyncio.get_running_loop().create_future(), prepare)
        self._waiting.append(put)
        self._next()
        return await put.answer

    def _next(self) -> None:
        """Start a batch of the PUTs waiting, unless one is in flight (its end starts the next)."""
        if self._in_flight:
            return
        batch, self._waiting = take_batch(self._waiting)
        if batch:
            self._in_flight = True
            asyncio.ensure_future(self._commit(batch))

    async def _commit(self, batch: list[Waiting]) -> None:
        try:
            results = await on_pool(self._pool, self._store_batch, [p.prepare for p in batch])
        except Exception as err:  # noqa: BLE001 - the whole batch failed: every request of it is answered with it
            results = [err] * len(batch)
        finally:
            self._in_flight = False
        for put, result in zip(batch, results):
            if not put.answer.done():  # a request cancelled meanwhile waits no more
                if isinstance(result, Exception):
                    put.answer.set_exception(result)
                else:
                    put.answer.set_result(result)
        self._next()

    def _store_batch(self, prepares: list[Callable[[], SmallFile]]) -> list[StoreResult | Exception]:
        """One batch's store (on the group's thread): its files prepared, then stored under the shared lease and
        their keys' locks; a PUT whose preparation failed has that error in its place."""
        prepared = [_prepared(prepare) for prepare in prepares]
        files = [file for file in prepared if isinstance(file, SmallFile)]
        if not files:
            return prepared
        with self._leases.hold() as lease, contextlib.ExitStack() as locks:
            for key in sorted(small.id for small in files):  # in key order: two holders of several never deadlock
                locks.enter_context(self._head_locks.holding(key))
            stored = iter(self._store.put_many(files, lease=lease))
        return [next(stored) if isinstance(file, SmallFile) else file for file in prepared]


def _prepared(prepare: Callable[[], SmallFile]) -> SmallFile | Exception:
    """The file ``prepare`` makes, or the error it raised: its own PUT's answer (an S3 BadDigest), the others go on."""
    try:
        return prepare()
    except Exception as err:  # noqa: BLE001 - answered to its request, as a file's own error of put_many
        return err
