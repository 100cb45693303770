"""The store pipeline: read once, chunk, hash, deduplicate, upload, commit.

One pass over the source, in segments (:mod:`casstor_ops.chunking`). The
caller's thread cuts blocks; two worker threads hash them; the driver's
thread moves bytes. The file hash is computed from the block hashes
(:func:`~casstor_ops.hashing.file_hash`), so every byte is hashed once.

Distinct hashes not yet known to this store go to ``existing_blocks`` in
batches (``IN ? LIMIT ?``) while chunking continues. A missing block is
claimed first (``INSERT … IF NOT EXISTS`` into ``block_claims``, a TTL row
naming this store; one conditional batch per claims partition, so one Paxos
round covers many blocks), so of concurrent stores that all find a shared block
missing exactly one uploads it: content row first, then, once it is
acknowledged, its ``existing_blocks`` row in an unlogged batch with
others. The others check again, with growing pauses, until that index row
appears, or claim the block themselves once the claim of a writer that
died has expired (``CLAIM_TTL_S``). So a block is written once whatever
the concurrency, and ``new_blocks`` counts the blocks this store wrote.
Bytes held for checks and uploads are bounded (``max_held_bytes``), and so
is the number of requests in flight
(:class:`~casstor_ops.inflight.RequestWindow`).

Commit protocol (BRIEF; online reclaim relies on it):

1. every block the commit relies on was verified (found by a check, or
   written) less than the commit bound before the head write: blocks
   verified more than half the bound ago are re-checked first, and missing
   ones re-read from the (seekable) source and re-uploaded;
2. the version timeuuid is made when the block list starts being written;
   the list goes to ``file_blocks`` in single-partition batches sized from
   the server's ``batch_size_fail_threshold``;
3. the head row in ``files`` is written last, unless more than the bound
   has passed since the version's time (then a retry with a new version, and
   finally :class:`~casstor_ops.errors.CasstorError`).

A store killed at any point before (3) leaves the previous head untouched;
re-running it finds the blocks already there and completes.

Example::

    >>> result = Upload(session, settings).run(open("a.bin", "rb"), "a.bin")  # doctest: +SKIP
    >>> result.new_bytes                                                       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from functools import partial
from typing import BinaryIO

from cassandra.cluster import Session
from cassandra.query import BatchStatement, BatchType
from cassandra.util import uuid_from_time

from .chunking import Segment, chunks, segments
from .errors import CasstorError
from .hashing import block_hash, file_hash
from .inflight import RETRYABLE, RequestWindow
from .progress import Progress
from .records import StoreResult
from .schema import StoreSettings, claim_bucket, commit_bound_s
from .statements import Statements

CHECK_BATCH = 256          # distinct hashes per existence check
INDEX_BATCH = 32           # existing_blocks rows per unlogged batch (~1.5 KiB: under the 5 KiB warn threshold)
MAX_REQUESTS = 32          # concurrent requests (see docs/driver.md)
MAX_HELD_BYTES = 96 * 1024 * 1024
COMMIT_ATTEMPTS = 3
# A claim must outlive one block's upload and index row (well under a second here, seconds on a loaded
# node; one that outlives it costs a duplicate upload, nothing worse). It is also how long a store
# killed with -9 can delay the next store of the blocks it had claimed (with 60 s, the re-run in
# tests/test_cmd_files.py took 67 s).
CLAIM_TTL_S = 20
AWAIT_FIRST_S = 0.02   # first pause before checking again a block another writer claimed; doubles
AWAIT_MAX_S = 1.0
RELEASE_TIMEOUT_S = 5.0
# Block hashes are computed by worker threads (hashlib releases the GIL) while the caller's thread
# chunks the next segment: the hash is the limit.
HASH_THREADS = 2

# Bytes one file_blocks row adds to a batch as Cassandra counts it against
# batch_size_fail_threshold (PartitionUpdate.dataSize: clustering, liveness,
# two cells with timestamps). Measured on 5.0: a 2-partition batch of 487
# rows is the largest under 50 KiB, i.e. 105 bytes a row; 128 leaves room.
FILE_BLOCK_ROW_BYTES = 128
DEFAULT_BATCH_FAIL_BYTES = 50 * 1024
_UNITS = {"B": 1, "KIB": 1024, "MIB": 1024 ** 2, "KB": 1024, "MB": 1024 ** 2}


def batch_fail_threshold(session: Session) -> int:
    """The server's ``batch_size_fail_threshold`` in bytes (the default if it cannot be read)."""
    try:
        row = session.execute(session.prepare("SELECT value FROM system_views.settings WHERE name = ?"),
                              ("batch_size_fail_threshold",)).one()
    except Exception:  # virtual tables absent (older servers) or not permitted: assume the default
        return DEFAULT_BATCH_FAIL_BYTES
    match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", (row.value if row else "").strip())
    if not match:
        return DEFAULT_BATCH_FAIL_BYTES
    return int(match.group(1)) * _UNITS.get(match.group(2).upper() or "KIB", 1024)


def block_list_batch_rows(session: Session) -> int:
    """file_blocks rows per batch: three quarters of the fail threshold, computed from the row size."""
    return max(1, batch_fail_threshold(session) * 3 // 4 // FILE_BLOCK_ROW_BYTES)


_batch_rows: "weakref.WeakKeyDictionary[Session, int]" = weakref.WeakKeyDictionary()


def _cached_batch_rows(session: Session) -> int:
    """block_list_batch_rows, asked once per session (the threshold is node configuration)."""
    if session not in _batch_rows:
        _batch_rows[session] = block_list_batch_rows(session)
    return _batch_rows[session]


class Upload:
    """One store of one file (not reusable)."""

    def __init__(self, session: Session, settings: StoreSettings, statements: Statements | None = None,
                 max_requests: int = MAX_REQUESTS, max_held_bytes: int = MAX_HELD_BYTES,
                 check_batch: int = CHECK_BATCH, progress: Progress | None = None) -> None:
        self._session = session
        self._settings = settings
        self._st = statements or Statements.for_session(session)
        self._window = RequestWindow(session, max_requests, execution_profile=self._st.plain_rows)
        self._max_held = max_held_bytes
        self._check_batch = check_batch
        self._progress = progress
        self._hashes: list[bytes] = []          # the file's blocks, in order
        self._sizes: list[int] = []
        self._verified: dict[bytes, float] = {}  # hash -> wall time its check or write was sent
        self._pending: dict[bytes, memoryview | bytes] = {}  # hash -> content, until verified
        self._to_check: list[bytes] = []
        self._to_index: list[tuple[bytes, float]] = []
        self._held = 0
        self._writer = uuid.uuid4()              # this store, in block_claims
        self._awaited: list[bytes] = []          # missing blocks another writer claimed
        self._held_claims: set[bytes] = set()    # blocks this store claimed and has not indexed yet
        self._await_pause = AWAIT_FIRST_S
        self.new_blocks = 0
        self.new_bytes = 0

    # -- chunk, hash, check, upload ---------------------------------------------------------------

    def _add(self, data: memoryview, digest: bytes) -> None:
        self._hashes.append(digest)
        self._sizes.append(len(data))
        if digest in self._verified or digest in self._pending:
            return
        self._pending[digest] = data
        self._held += len(data)
        self._to_check.append(digest)
        if len(self._to_check) >= self._check_batch:
            self._send_check()

    def _send_check(self) -> None:
        hashes, self._to_check = self._to_check, []
        self._check(hashes)

    def _check(self, hashes: list[bytes], on_missing: Callable[[list[bytes]], None] | None = None) -> None:
        """Existence checks of ``hashes``; the missing ones go to ``on_missing`` (default: claim them)."""
        for start in range(0, len(hashes), self._check_batch):
            batch = hashes[start:start + self._check_batch]
            self._window.submit(self._st.existing, (batch, len(batch)),
                                partial(self._checked, batch, time.time(), on_missing or self._claim))

    def _checked(self, hashes: list[bytes], sent: float, on_missing: Callable[[list[bytes]], None], rows) -> None:
        found = {row[0] for row in rows}
        missing = []
        for digest in hashes:
            if digest in found:
                self._verified[digest] = sent
                self._held -= len(self._pending.pop(digest, b""))
            else:
                missing.append(digest)
        if missing:
            on_missing(missing)

    def _claim(self, hashes: list[bytes]) -> None:
        """Claim missing blocks: one conditional batch per claims partition (one Paxos round for many)."""
        buckets: dict[int, list[bytes]] = {}
        for digest in hashes:
            buckets.setdefault(claim_bucket(digest), []).append(digest)
        for bucket, group in buckets.items():
            self._send_claims(bucket, group)

    def _send_claims(self, bucket: int, group: list[bytes]) -> None:
        batch = BatchStatement(BatchType.UNLOGGED)
        for digest in group:
            batch.add(self._st.claim_block, (bucket, digest, self._writer, CLAIM_TTL_S))
        self._window.submit(batch, None, partial(self._claimed, bucket, group))

    def _claimed(self, bucket: int, group: list[bytes], rows) -> None:
        if rows[0][0]:  # [applied]: every claim of the batch is ours
            for digest in group:
                self._upload(digest)
            return
        # Not applied: the rows returned are the claims that already exist, (applied, bucket, hash, writer).
        # Ours are those a retried batch's first, timed-out attempt wrote (or an earlier claim of a block
        # that vanished since); the rest of the group is claimed again without the others'.
        holders = {row[2]: row[3] for row in rows}
        rest = []
        for digest in group:
            holder = holders.get(digest)
            if holder == self._writer:
                self._upload(digest)
            elif holder is None:
                rest.append(digest)
            else:
                if not self._awaited:
                    self._await_pause = AWAIT_FIRST_S
                self._awaited.append(digest)
        if rest:
            self._send_claims(bucket, rest)

    def _check_awaited(self) -> None:
        """After a pause (doubling), check again the blocks other writers claimed; claim those still missing."""
        time.sleep(self._await_pause)
        self._await_pause = min(AWAIT_MAX_S, self._await_pause * 2)
        hashes, self._awaited = self._awaited, []
        self._check(hashes)

    def _upload(self, digest: bytes) -> None:
        self._held_claims.add(digest)
        data = self._pending[digest]
        self._window.submit(self._st.insert_block, (digest, len(data), data),
                            partial(self._written, digest, time.time()))

    def _written(self, digest: bytes, sent: float, _rows) -> None:
        self._to_index.append((digest, sent))
        if len(self._to_index) >= INDEX_BATCH:
            self._send_index()

    def _send_index(self) -> None:
        items, self._to_index = self._to_index, []
        if not items:
            return
        batch = BatchStatement(BatchType.UNLOGGED)
        for digest, _ in items:
            batch.add(self._st.insert_existing, (digest, len(self._pending[digest])))
        self._window.submit(batch, None, partial(self._indexed, items))

    def _indexed(self, items: list[tuple[bytes, float]], _rows) -> None:
        for digest, sent in items:
            self._verified[digest] = sent
            self._held_claims.discard(digest)
            size = len(self._pending.pop(digest))
            self._held -= size
            self.new_blocks += 1
            self.new_bytes += size

    def _settle(self) -> None:
        """Wait for every check, upload and index row submitted so far, and for blocks other writers claimed."""
        self._send_check()
        while self._window.busy or self._to_index or self._awaited:
            if self._window.busy:
                self._window.poll()
            elif self._to_index:
                self._send_index()
            else:
                self._check_awaited()

    def _limit_held(self) -> None:
        while self._window.poll(block=False):
            pass
        while self._held > self._max_held:
            if self._to_check:
                self._send_check()
            if self._to_index and self._window.in_flight < self._window.max_requests:
                self._send_index()
            if not self._window.poll():
                if not self._awaited:
                    break
                self._check_awaited()

    # -- commit ----------------------------------------------------------------------------------

    def _recheck(self, reader: BinaryIO, older_than: float) -> None:
        """Re-verify blocks checked before ``older_than``; re-upload any that vanished."""
        stale = [h for h, t in self._verified.items() if t < older_than]
        if not stale:
            return
        offsets = dict(zip(reversed(self._hashes), reversed(list(itertools.accumulate([0] + self._sizes[:-1])))))
        sizes = dict(zip(self._hashes, self._sizes))

        def reread(missing: list[bytes]) -> None:
            for digest in missing:
                if not reader.seekable():
                    raise CasstorError(f"block {digest.hex()} vanished during the store (online reclaim?) and the "
                                       f"source cannot be re-read; store it again")
                reader.seek(offsets[digest])
                data = reader.read(sizes[digest])
                if block_hash(data) != digest:
                    raise CasstorError("the source changed while it was being stored; store it again")
                self._pending[digest] = data
            self._claim(missing)

        self._check(stale, on_missing=reread)
        self._settle()

    def _write_block_list(self, file_id: str, version) -> None:
        rows_per_batch = _cached_batch_rows(self._session)
        offset = 0
        for start in range(0, len(self._hashes), rows_per_batch):
            batch = BatchStatement(BatchType.UNLOGGED)
            for digest, size in zip(self._hashes[start:start + rows_per_batch],
                                    self._sizes[start:start + rows_per_batch]):
                batch.add(self._st.insert_file_block, (file_id, version, offset, digest, size))
                offset += size
            self._window.submit(batch, None, lambda _rows: None)
        self._window.drain()

    def _write_head(self, file_id: str, version, version_time: float, bound: float, size: int,
                    digest: bytes) -> bool:
        for attempt in range(5):
            now = time.time()
            oldest = min(self._verified.values(), default=now)
            if now - version_time >= bound or now - oldest >= bound:
                return False
            try:
                self._session.execute(self._st.insert_head, (file_id, version, size, digest, len(self._hashes),
                                                             datetime.now(timezone.utc)))
                return True
            except RETRYABLE:
                if attempt == 4:
                    raise
                time.sleep(0.2 * 2 ** attempt)
        return False

    def _commit(self, reader: BinaryIO, file_id: str, size: int, digest: bytes) -> None:
        bound = float(commit_bound_s(self._session))
        for _ in range(COMMIT_ATTEMPTS):
            self._recheck(reader, time.time() - bound / 2)
            version_time = time.time()
            version = uuid_from_time(version_time)
            self._write_block_list(file_id, version)
            if self._write_head(file_id, version, version_time, bound, size, digest):
                return
        raise CasstorError(f"could not commit {file_id!r} within the commit bound ({bound:.0f} s): the cluster is "
                           f"too slow; store it again")

    def _take(self, segment: Segment, digests: Future) -> None:
        for data, digest in zip(segment.chunks, digests.result()):
            self._add(data, digest)
        if self._progress:
            self._progress(segment.fresh_bytes)
        self._limit_held()

    def run(self, reader: BinaryIO, file_id: str) -> StoreResult:
        """Store everything ``reader`` yields under ``file_id``; the new head is the commit point."""
        started = time.perf_counter()
        size = 0
        hashing: deque[tuple[Segment, Future]] = deque()
        try:
            with ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="casstor-hash") as pool:
                for segment in segments(reader, self._settings):
                    size += segment.fresh_bytes
                    hashing.append((segment, pool.submit(_block_hashes, segment.chunks)))
                    if len(hashing) > HASH_THREADS:
                        self._take(*hashing.popleft())
                while hashing:
                    self._take(*hashing.popleft())
            self._settle()
        except BaseException:
            self._release_claims()
            raise
        self._commit(reader, file_id, size, file_hash(self._hashes))
        return StoreResult(file_id, size, len(self._hashes), self.new_blocks, self.new_bytes,
                           round(time.perf_counter() - started, 6))


    def _release_claims(self) -> None:
        """A failing store gives up the claims it has not indexed, so the next store need not wait for them
        to expire (a store killed with -9 cannot: its claims expire after ``CLAIM_TTL_S``)."""
        buckets: dict[int, list[bytes]] = {}
        for digest in self._held_claims:
            buckets.setdefault(claim_bucket(digest), []).append(digest)
        for bucket, group in buckets.items():
            batch = BatchStatement(BatchType.UNLOGGED)
            for digest in group:
                batch.add(self._st.release_claim, (bucket, digest, self._writer))
            with contextlib.suppress(Exception):  # best effort: the cluster may be what failed; the TTL remains
                self._session.execute(batch, timeout=RELEASE_TIMEOUT_S)


def _block_hashes(blocks: list[memoryview]) -> list[bytes]:
    return [block_hash(c) for c in blocks]


def source_file_hash(source: BinaryIO | str | os.PathLike, settings: StoreSettings) -> bytes:
    """The file hash a store of ``source`` would record (reads, cuts and hashes it; writes nothing)."""
    return file_hash(block_hash(c) for c in chunks(source, settings))
