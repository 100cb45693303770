"""The commit: a stored file's block list, then its head row, within the commit bound.

Commit protocol (BRIEF; online reclaim relies on it):

1. every block the commit relies on was verified (found by a check, or
   written) less than the commit bound before the head write: blocks
   verified more than half the bound ago are re-checked first, and missing
   ones re-read from the (seekable) source and re-uploaded. The bound is
   read from the store, except by a commit whose every verification is
   younger than half of ``SAFETY.min_commit_bound_s`` (the least bound a store can
   have): its first attempt holds itself to that least bound, which is only
   stricter (it retries under the store's own);
2. the version timeuuid is made when the block list starts being written;
   the list goes to ``file_blocks`` in single-partition batches of
   ``BLOCK_LIST_BATCH_ROWS`` rows;
3. the version row in ``versions`` (the new head, with the source's mode and
   mtime, or nulls when unknown) is written last, then the file's entry in
   its directory (:mod:`casstor_ops.store.namespace`; a listing shows it from
   then on), unless more than the bound
   has passed since the version's time (then a retry with a new version, and
   finally :class:`~casstor_ops.errors.CasstorError`), and only after the
   writer's lease passed its fence (``fence``, before each attempt): a store
   paused or cut off for longer than the lease TTL looked finished to an
   offline reclaim, which may have deleted the blocks it verified;
4. a head write acknowledged more than the bound plus
   ``SAFETY.late_head_margin_s`` after the oldest
   check (it waited in a queue, or the node stalled) may have been applied
   after an online reclaim re-read the heads and deleted blocks it names,
   and its block list as stale: every block is checked again and missing
   ones uploaded again, as in (1), and the block list is written again.

Every duration here (since a check, since the version's start, until the
acknowledgement) is measured on ``time.monotonic()``, so a step of the wall
clock cannot stretch or shrink the bound; the version's timeuuid alone is
wall-clock time, because reclaim compares it with its own host's clock.

An inline file (:mod:`casstor_ops.store.engine.inline`) relies on no block and has
no block list: its commit is (3) alone, the head row with the content.

A store killed at any point before (3) leaves the previous head untouched;
re-running it finds the blocks already there and completes.

Example::

    >>> blocks = VerifiedBlocks(hashes, sizes, uploads.verified, reverify)
    >>> commit = Commit(session, requests, statements, blocks, fence=lease.fence)             # doctest: +SKIP
    >>> commit.run(reader, "a.bin", size)                                                      # doctest: +SKIP

Failure behaviour: a source that cannot be re-read (not seekable) or that
changed, or a commit that cannot finish within the bound after
``COMMIT_ATTEMPTS`` versions, raises :class:`~casstor_ops.errors.CasstorError`;
a lapsed lease, :class:`~casstor_ops.errors.LeaseLapsedError` (from ``fence``);
a head write that keeps timing out raises the driver's error. Either way the
previous head stays the committed version, except when the source fails in
(4): that comes after the new head was written, and the file must be stored
again for the blocks it lost.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import BinaryIO

from cassandra.cluster import Session
from cassandra.query import UNSET_VALUE
from cassandra.util import uuid_from_time

from casstor_ops.errors import CasstorError
from casstor_ops.store.blocks.block_list import hash_column, lone_block
from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.coordination.commit_bound import commit_bound_s
from casstor_ops.store.coordination.heartbeat import Fence, no_fence
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.request_queue import RETRYABLE, RequestQueue
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.engine.inline import encode, head_columns, inline_hash, inline_result
from casstor_ops.store.namespace.entries import BatchedEntries, Namespace, version_micros
from casstor_ops.store.records import FileAttributes, FileInfo, InlineContent, ObjectMeta, StoreResult, VersionRow

COMMIT_ATTEMPTS = 3        # versions tried before the commit gives up
HEAD_WRITE_ATTEMPTS = 5    # a timed-out head write is retried (the same upsert), within the bound
HEAD_RETRY_FIRST_S = 0.2   # first pause before retrying the head write; doubles

# file_blocks rows per batch. A block list is one partition ((id, version)), so its batches are
# single-partition: Cassandra exempts them from batch_size_warn/fail_threshold (measured on 5.0: 2,000 rows,
# ~200 KiB, accepted without a warning; a two-partition batch of 600 rows refused as "Batch too large"). The
# count only bounds a request's size (~30 KiB); it was derived from the threshold, read from the node.
BLOCK_LIST_BATCH_ROWS = 300


Reverify = Callable[[list[bytes], Callable[[bytes], bytes]], None]
"""Check blocks again; upload again those missing, with content from the given reader of one block; return
once all is settled."""


@dataclass(frozen=True)
class VerifiedBlocks:
    """The blocks a commit relies on: the file's block hashes and sizes in order, when each distinct block was
    last verified (found or written; ``time.monotonic()`` seconds), and how to verify some of them again."""

    hashes: list[bytes]
    sizes: list[int]
    verified: Mapping[bytes, float]
    reverify: Reverify


class Commit:
    """The commit of one stored file whose blocks are all verified (not reusable)."""

    def __init__(self, session: Session, requests: RequestQueue, statements: Statements, blocks: VerifiedBlocks, *,
                 namespace: Namespace | BatchedEntries, attributes: FileAttributes | None = None, fence: Fence = no_fence,
                 stored: InlineContent | None = None, inline_store: bool = False,
                 object_meta: Callable[[], ObjectMeta] | None = None) -> None:
        self._session = session
        self._namespace = namespace
        self._requests = requests
        self._st = statements
        self._blocks = blocks
        self._hashes = blocks.hashes
        self._sizes = blocks.sizes
        self._attributes = attributes
        self._fence = fence
        self._stored = stored  # an inline file's content; its hashes and sizes are still its one block's
        self._content_columns = head_columns(stored, inline_store)
        self._object_meta = object_meta  # an S3 object's attributes, known once its body was read

    def run(self, reader: BinaryIO, file_id: str, size: int) -> FileInfo:
        """Commit the file under ``file_id`` (``reader`` is its source, re-read only for vanished blocks); its new
        head."""
        bound = self._first_bound()
        for _ in range(COMMIT_ATTEMPTS):
            self._recheck(reader, time.monotonic() - bound / 2)
            # The version's time is a wall-clock timestamp: reclaim compares it with its own clock (another host's)
            # to tell a stale block list. How long the version has been under way is a duration, on this host.
            version = uuid_from_time(time.time())
            started = time.monotonic()
            if self._stored is None:
                self._write_block_list(file_id, version)
            row = head_row(file_id, version, size, self._hashes, self._attributes, self._stored,
                           self._content_columns)
            acknowledged = self._write_head(row, started, bound)
            if acknowledged is not None:
                self._check_again_after_late_head(reader, file_id, version, acknowledged, bound)
                committed = row.head(self._attributes)
                self._namespace.publish(committed, self._stored_size())
                return committed
            bound = float(commit_bound_s(self._session))  # the store's own bound from now on: it may be longer
        raise CasstorError(f"could not commit {file_id!r} within the commit bound ({bound:.0f} s): the cluster is "
                           f"too slow; store it again")

    def _stored_size(self) -> int | None:
        return len(self._stored.payload) if self._stored is not None else None

    def _first_bound(self) -> float:
        """The bound of the first attempt: the least one any store has, when every verification is younger than
        half of it (then nothing is stale, and holding the head write to a shorter bound than the store's own
        is only stricter); else the store's. A small file's store saves a read this way.
        """
        now = time.monotonic()
        return first_bound(self._session, now - self._oldest_check(now))

    def _recheck(self, reader: BinaryIO, older_than: float) -> None:
        """Re-verify blocks checked before ``older_than``; re-upload any that vanished."""
        stale = [h for h, t in self._blocks.verified.items() if t < older_than]
        if stale:
            self._blocks.reverify(stale, partial(self._reread, reader, self._locations()))

    def _check_again_after_late_head(self, reader: BinaryIO, file_id: str, version: uuid.UUID, acknowledged: float,
                                     bound: float) -> None:
        """Step (4): every block again, and the block list, when the head write was acknowledged too late to be sure
        an online reclaim saw it. The rewrites carry a later timestamp than that reclaim's deletes, so they survive
        them."""
        if late_head(acknowledged, self._oldest_check(acknowledged), bound):
            self._recheck(reader, acknowledged)
            if self._stored is None:
                self._write_block_list(file_id, version)

    def _oldest_check(self, now: float) -> float:
        """When the oldest of the blocks this commit relies on was verified (``now`` when there is none)."""
        return min(self._blocks.verified.values(), default=now)

    def _locations(self) -> dict[bytes, tuple[int, int]]:
        """Each block's first offset in the source, and its size."""
        found: dict[bytes, tuple[int, int]] = {}
        for offset, digest, size in zip(itertools.accumulate([0] + self._sizes), self._hashes, self._sizes):
            found.setdefault(digest, (offset, size))
        return found

    def _reread(self, reader: BinaryIO, locations: dict[bytes, tuple[int, int]], digest: bytes) -> bytes:
        if not reader.seekable():
            raise CasstorError(f"block {digest.hex()} vanished during the store (online reclaim?) and the "
                               f"source cannot be re-read; store it again")
        offset, size = locations[digest]
        reader.seek(offset)
        data = reader.read(size)
        if block_hash(data) != digest:
            raise CasstorError("the source changed while it was being stored; store it again")
        return data

    def _write_block_list(self, file_id: str, version) -> None:
        rows = block_list_rows(file_id, version, self._hashes, self._sizes)
        for start in range(0, len(rows), BLOCK_LIST_BATCH_ROWS):
            self._requests.submit_batch(self._st.insert_file_block, rows[start:start + BLOCK_LIST_BATCH_ROWS],
                                      lambda _rows: None)
        self._requests.drain()

    def _write_head(self, row: VersionRow, started: float, bound: float) -> float | None:
        """Write the head row ``row`` unless the bound has passed since ``started`` (the version's start) or the
        oldest check: the (monotonic) time it was acknowledged, or None when the bound has passed (a new version is
        needed)."""
        meta = None if self._object_meta is None else self._object_meta()
        errors: list[Exception] = []

        def send(rows: list[list[tuple]]) -> list[list[tuple]]:
            try:
                write_version(self._session, self._st, rows[0][0], meta)
                return []
            except RETRYABLE as err:
                errors.append(err)
                return rows

        written = write_heads([[row]], send, lambda: in_time(started, self._oldest_check, bound),
                              lambda: self._fence(f"committing {row.id!r}"))
        if written.left and not written.timed_out:
            raise errors[-1]
        return written.acknowledged


@dataclass(frozen=True)
class HeadWrites:
    """What :func:`write_heads` did: the groups of heads never acknowledged, when the last group was (monotonic;
    None: none was), and whether it stopped because the bound had passed (else the attempts ran out)."""

    left: list[list[tuple]]
    acknowledged: float | None
    timed_out: bool


def write_heads(groups: list[list[tuple]], send: Callable[[list[list[tuple]]], list[list[tuple]]],
                in_time: Callable[[], bool], fence: Callable[[], None]) -> HeadWrites:
    """Step (3)'s head writes, for one file or a batch: ``send`` writes the groups of head rows (one request each)
    and answers those that failed with a retryable error; each attempt only while ``in_time()`` and after
    ``fence()``, ``HEAD_WRITE_ATTEMPTS`` at most, with doubling pauses between them (the same upserts again).

    Example::

        >>> write_heads([[row]], send, lambda: in_time(started, oldest_check, bound), lease.fence)   # doctest: +SKIP
        HeadWrites(left=[], acknowledged=1234.5, timed_out=False)

    A lapsed lease raises from ``fence`` (nothing sent after it); ``send``'s other errors are raised.
    """
    acknowledged = None
    for attempt in range(HEAD_WRITE_ATTEMPTS):
        if not in_time():
            return HeadWrites(groups, acknowledged, timed_out=True)
        fence()
        failed = send(groups)
        if len(failed) < len(groups):
            acknowledged = time.monotonic()
        groups = failed
        if not groups:
            break
        if attempt + 1 < HEAD_WRITE_ATTEMPTS:
            time.sleep(HEAD_RETRY_FIRST_S * 2 ** attempt)
    return HeadWrites(groups, acknowledged, timed_out=False)


def in_time(started: float, oldest_check: Callable[[float], float], bound: float) -> bool:
    """Whether a head may still be sent: less than ``bound`` since its version's start (``started``) and since the
    oldest verification of a block it relies on (monotonic seconds)."""
    now = time.monotonic()
    return now - started < bound and now - oldest_check(now) < bound


def first_bound(session: Session, oldest_age: float) -> float:
    """The bound of a commit's first attempt, its oldest verification ``oldest_age`` seconds old: the least one any
    store has while every verification is younger than half of it (holding the head write to a shorter bound than
    the store's own is only stricter), else the store's (read)."""
    if oldest_age < SAFETY.min_commit_bound_s / 2:
        return float(SAFETY.min_commit_bound_s)
    return float(commit_bound_s(session))


def late_head(acknowledged: float, oldest: float, bound: float) -> bool:
    """Whether a head write acknowledged at ``acknowledged`` (monotonic) came too late after its oldest verification
    for an online reclaim to have seen it: step (4) is then due."""
    return acknowledged - oldest >= bound + SAFETY.late_head_margin_s


def block_list_rows(file_id: str, version: uuid.UUID, hashes: list[bytes], sizes: list[int]) -> list[tuple]:
    """The values of ``insert_file_block`` for each block of a version's list, in order; none for a lone block
    (:mod:`casstor_ops.store.blocks.block_list`: its head row is its list)."""
    if lone_block(hashes, None) is not None:
        return []
    offsets = itertools.accumulate([0] + sizes)
    return [(file_id, version, offset, digest, size) for offset, digest, size in zip(offsets, hashes, sizes)]


def head_row(file_id: str, version: uuid.UUID, size: int, hashes: list[bytes], attributes: FileAttributes | None,
             stored: InlineContent | None, content_columns: tuple) -> VersionRow:
    """The values of ``insert_version`` for the new head of a file kept in the blocks ``hashes``, or inline as
    ``stored`` (then ``hashes`` is its one block's): :func:`version_row` with the file hash and block count."""
    blocks = 0 if stored is not None else len(hashes)
    return version_row(file_id, version, size, file_hash(hashes), blocks, attributes, content_columns,
                       lone_block(hashes, stored))


def version_row(file_id: str, version: uuid.UUID, size: int, digest: bytes, blocks: int,
                attributes: FileAttributes | None, content_columns: tuple, lone: bytes | None = None) -> VersionRow:
    """The values of ``insert_version`` (``content_columns``: :func:`~casstor_ops.store.engine.inline.head_columns`;
    ``lone``: a one-block file's block, :mod:`casstor_ops.store.blocks.block_list`), stamped with the version's time."""
    source = (attributes.mode, attributes.mtime_ns, attributes.ino, attributes.ctime_ns) if attributes \
        else (None,) * 4
    return VersionRow(file_id, version, size, digest, blocks, datetime.now(timezone.utc), *source, *content_columns,
                      False, lone, version_micros(version))


def write_version(session: Session, st: Statements, row: VersionRow, meta: ObjectMeta | None) -> None:
    """Write the version row ``row`` (:func:`version_row`'s values), with an S3 object's attributes ``meta`` in
    every one of their columns (None: a file that is no S3 object)."""
    session.execute(*version_write(st, row, meta))


def version_write(st: Statements, row: VersionRow, meta: ObjectMeta | None) -> Query:
    """The write of the version row ``row`` with ``meta`` (:func:`write_version`; a batch
    of heads writes each this way)."""
    row = row._replace(hash=hash_column(row.hash, row.lone_block))
    if meta is None:
        return Query(st.insert_version, fresh_row(row))
    return Query(st.insert_version_meta, fresh_row((*row[:-1], *meta.columns(), row.written_at)))


def fresh_row(values: tuple) -> tuple:
    """``values`` with each null, and each empty map or list (read back as null), bound as unset.

    A version row is always a new row (its timeuuid is in its key), so a null there clears nothing and only writes a
    tombstone that every read of the file's history steps over: four a row for a stream's source attributes, and
    four collection deletions more for an S3 object's empty metadata, headers, tags and parts."""
    return tuple(UNSET_VALUE if value is None or value in ({}, []) else value for value in values)


def commit_inline_async(session: Session, st: Statements, namespace: Namespace, file_id: str, data: bytes,
                        codec: BlockCodec, fence: Fence,
                        done: Callable[[StoreResult | None, Exception | None], None]) -> None:
    """Commit ``data`` as an inline file (:mod:`casstor_ops.store.engine.inline`; the caller checked it fits) without
    waiting: its version row, after ``fence``, then its entry. ``done(result, None)`` or ``done(None, error)`` is called once, on
    the driver's thread. Raises at once what ``fence`` raises. A failed or timed-out write is not retried (the
    caller may store the file again, with a retrying :class:`Commit`): the previous head stays, or this one
    landed whole.
    """
    started = time.perf_counter()
    stored, digest = encode(codec, data), inline_hash(data)
    fence(f"committing {file_id!r}")
    version = uuid_from_time(time.time())
    row = version_row(file_id, version, len(data), digest, 0, None, head_columns(stored, True))
    info = row.head(None)

    def listed(error: Exception | None) -> None:
        done(inline_result(file_id, len(data), stored, digest, started) if error is None else None, error)

    future = session.execute_async(*version_write(st, row, None))
    future.add_callbacks(lambda _rows: namespace.publish_async(info, len(stored.payload), listed),
                         lambda error: done(None, error))
