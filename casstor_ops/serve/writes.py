"""PUT and DELETE of ``/<key>``: :class:`Writes`, with the writer lease, the key locks and the write pool they share.

=======  =================================================================
PUT      store the body under the key (200, the store's JSON result:
         ``{"id","bytes","blocks","new_blocks","new_bytes","seconds",
         "new_stored_bytes"}``, and the new version's ETag); ``If-Match`` /
         ``If-None-Match``: 412 when the current head does not satisfy them;
         411 without Content-Length where one is required, 413 over the
         body limit
DELETE   remove the file (200, its last head as JSON); its blocks stay until reclaim;
         ``If-Match`` / ``If-None-Match`` as for PUT (412, nothing removed)
=======  =================================================================

A store write blocks (it drives the driver's futures on its own thread), so
it runs on a bounded worker pool (``WRITE_THREADS``): a write holds an
upload's worth of memory, so fewer run at once than reads. A body is
streamed to the store (:mod:`.streams`), except a small one (at most
``SMALL_BODY_BYTES``): a PUT's first ``SMALL_BODY_BYTES`` are read on the
event loop before it takes a write thread (at most ``SMALL_BODIES_HELD``
PUTs at once), so a slow client pins no thread while it sends them and is
ended by the body deadline (``Policy.body_timeout_s``, 408); a body that
ended there is handed to its worker as a seekable file, so the store can
re-read a block that vanished meanwhile (online reclaim) where a stream
cannot be.
An unconditional PUT of such a body (one the store does not keep inline) is
stored in a batch with the others waiting (:mod:`.group_commit`).
In a store that keeps small files inline (:mod:`casstor_ops.store.engine.inline`),
an unconditional PUT of one is committed on the driver's callbacks: one
head write, no worker thread (``Store.callbacks.put_inline_async``), when
the lease and the key's lock can be had without waiting; else, or when that
write fails, the worker thread stores it as any other.
Writes borrow the server's shared writer lease (:mod:`.shared_lease`). A
PUT's preconditions are checked before its body is read (a stale ETag costs
no upload; on a read thread: a check is a head read) and again just before
its head write, under the key's in-process lock (:mod:`.head_locks`), which
a DELETE of the key takes too (and checks its own preconditions under).

Example::

    >>> writes = Writes(store, SharedLease(store.session), Policy(), read_pool)  # doctest: +SKIP
    >>> response = await writes.put(request, "photos/a.jpg")                    # doctest: +SKIP

Failures: raised, for the dispatcher (:mod:`.app`) to answer: a bad key
(400), a Content-Length over the limit (413) or missing where required
(411), before the lease is taken or a byte of the body read; a failed
precondition (412) before the body is read or, if the head changed
meanwhile, instead of the head write (nothing committed); the body's
deadline (408) or the client gone (nothing stored); the store's errors
(:mod:`.status`).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import BinaryIO, TypeVar

from cassandra import OperationTimedOut
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from casstor_ops.errors import NotFoundError
from casstor_ops.serve.bridge import answered, on_pool
from casstor_ops.serve.group_commit import GroupCommit
from casstor_ops.serve.head_locks import HeadLocks
from casstor_ops.serve.policy import Policy
from casstor_ops.serve.shared_lease import SharedLease
from casstor_ops.serve.status import BodyTooLarge, LengthRequired
from casstor_ops.serve.streams import SMALL_BODY_BYTES, BodyReader
from casstor_ops.serve.validators import WritePrecondition, etag
from casstor_ops.store.api import FileInfo, Store, StoreResult
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.ids import check_id

WRITE_THREADS = 4
# PUTs whose first MiB (a small body whole) is read and held at once, at most (64 MiB): the others wait.
SMALL_BODIES_HELD = 64

T = TypeVar("T")


class Writes:
    """PUT and DELETE on one store (see the module docstring); ``checks`` is the pool a PUT's first precondition
    check runs on (the read pool); ``close()`` when the server stopped."""

    def __init__(self, store: Store, leases: SharedLease, policy: Policy, checks: ThreadPoolExecutor) -> None:
        self._store = store
        self._leases = leases
        self._policy = policy
        self._checks = checks
        self._pool = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="casstor-serve-write")
        self.small_bodies = asyncio.Semaphore(SMALL_BODIES_HELD)  # S3's PUTs hold theirs under it too
        self.head_locks = HeadLocks()
        self.group = GroupCommit(store, leases, self.head_locks)

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)
        self.group.close()

    async def write(self, action: Callable[..., T]) -> T:
        """What ``action(lease=…)`` returns, run on a write thread under the shared writer lease (S3's writes)."""
        return await on_pool(self._pool, self._write, action)

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

    async def put(self, request: Request, key: str) -> Response:
        """Answer a PUT of ``key``."""
        check_id(key, storing=True)  # before the lease and before a byte of the body is read
        self._check_length(request.headers.get("content-length"))  # the server refuses a malformed one
        condition = WritePrecondition.of(request.headers.get("if-match"), request.headers.get("if-none-match"))
        if condition is not None:
            condition.check(await on_pool(self._checks, self._current_etag, key), key)  # a stale ETag: no upload
        reader = BodyReader(request.stream(), asyncio.get_running_loop(), limit=self._policy.max_body,
                            deadline_s=self._policy.body_timeout_s)
        async with self.small_bodies:
            # The first MiB (a small body whole) is read here: a slow client holds no write thread meanwhile.
            source: BinaryIO = reader
            if await reader.read_ahead(SMALL_BODY_BYTES):
                body = reader.held()
                result = await self._put_inline(body, key) if condition is None else None
                if result is None and condition is None and not self._store.callbacks.keeps_inline(len(body)):
                    result = await self.group.put(body, key)
                if result is not None:
                    return JSONResponse(result.as_dict(), headers={"etag": etag(result.hash)})
                source = io.BytesIO(body)  # seekable: the store can re-read a block that vanished meanwhile
            result = await on_pool(self._pool, self._write, partial(self._put_body, source, key, condition))
        return JSONResponse(result.as_dict(), headers={"etag": etag(result.hash)})

    async def _put_inline(self, body: bytes, key: str) -> StoreResult | None:
        """An unconditional PUT of a file the store keeps inline, committed on the driver's callbacks: one head
        write, no worker thread. None when it is not such a file, when the lease or the key's lock cannot be
        had without waiting, or when the write failed: then the worker thread stores it, which waits for both,
        retries, and gives the status that applies. A write that got no answer within the driver's request
        timeout is raised instead (503): the client has waited that long already, and a node that did not
        answer one write will not answer the worker's first request either (measured with the node frozen:
        60 s to the 503 with a second try, 30 s without; ``tests/test_serve_faults.py``)."""
        calls = self._store.callbacks
        if not calls.keeps_inline(len(body)):
            return None
        with self._leases.hold_if_fresh() as lease, self.head_locks.lock_for(key) as lock:
            if lease is None or not lock.take_now():
                return None
            try:
                return await answered(partial(calls.put_inline_async, body, key, lease))
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

        with self.head_locks.lock_for(key) as lock:
            return self._store.put(source, key, lease=lease, before_commit=lock.then(check))

    async def delete(self, request: Request, key: str) -> Response:
        """Answer a DELETE of ``key``."""
        check_id(key)
        condition = WritePrecondition.of(request.headers.get("if-match"), request.headers.get("if-none-match"))
        removed = await on_pool(self._pool, self._write, partial(self._remove, key, condition))
        return JSONResponse(removed.as_dict())

    def _remove(self, key: str, condition: WritePrecondition | None, lease: WriterLease) -> FileInfo:
        """The store call of a DELETE (worker thread), under the key's lock: its precondition is checked there (a
        client deleting the version it saw never deletes a newer one), and it never lands between a conditional
        PUT's check and its head write, which would write the head again."""
        with self.head_locks.holding(key):
            if condition is not None:
                condition.check(self._current_etag(key), key)
            return self._store.remove(key, lease=lease)
