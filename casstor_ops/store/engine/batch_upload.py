"""Small files stored together: each step of a store taken for a whole batch of files at once.

A lone store (:class:`~casstor_ops.store.engine.upload.Upload`) pays about five
requests per small file: its existence check, the block, its index row, the
block list and the head. :class:`BatchUpload` moves a batch of small files
(each held in memory: at most :data:`SMALL_FILE_BYTES` is what callers send
it) through the same steps together, each step for all of them in as few
requests as it can, and each only once the previous one is acknowledged:

1. every file is read, cut and hashed;
2. one existence check for the batch's distinct blocks (``CHECK_BATCH``
   hashes a request: :mod:`casstor_ops.store.blocks.existence`);
3. the missing blocks' content, pipelined one request a block (content
   never goes in a batch: Cassandra refuses a batch above
   ``batch_size_fail_threshold``, 50 KiB), then their index rows in unlogged
   batches (:mod:`casstor_ops.store.blocks.block_uploads`). A file's *lone small
   block* (its only block, no larger than the chunker's minimum) is
   uploaded unclaimed, as a lone store uploads it; other missing blocks are
   claimed first (:mod:`casstor_ops.store.blocks.claims`). That is safe because a
   claim only saves work: two stores of the same block write the same bytes
   into the same row, content before index row each, so a duplicate upload
   costs bytes and a miscount of ``new_blocks``, never a block;
4. the block lists, many files' rows to an unlogged batch (bounded by
   ``ROW_BATCH_ROWS`` rows and ``UNLOGGED_BATCH_BYTES`` bytes:
   :func:`~casstor_ops.store.cql.request_queue.row_batches`);
5. the writer lease's fence, then the heads (``insert_version``, the values
   :func:`~casstor_ops.store.engine.commit.head_row` makes for a lone store too; an
   S3 object's with its attributes, as
   :func:`~casstor_ops.store.engine.commit.version_write` gives for a lone store),
   batched the same way, then the files' directory entries (as one
   directory's batch: :class:`~casstor_ops.store.namespace.entries.BatchedEntries`).

The commit protocol of :mod:`casstor_ops.store.engine.commit` holds per batch: no
head is sent before every block of the batch is verified and every block
list acknowledged; the first attempt is held to the least commit bound when
every verification is younger than half of it (else the store's bound is
read); a head is never sent once the bound has passed since the batch's
oldest verification or since its versions were made (the files not
committed then get new versions, under the store's own bound, their stale
blocks checked again and re-uploaded from memory, their lists written
again); and heads acknowledged later than the bound plus
``SAFETY.late_head_margin_s`` check every block again and write the lists
again. A file's result is what a lone store of it returns (a
:class:`~casstor_ops.store.records.StoreResult` with its version; a block
new to the store counts as new for the first file of the batch that has
it, as if the files were stored one after the other).

The API takes no tree: files in, results or errors out, in order, so an
HTTP server may use it as a group commit of concurrent small PUTs.

Example::

    >>> batch = BatchUpload(session, settings, fence=lease.fence)               # doctest: +SKIP
    >>> batch.run([SmallFile("a.txt", b"hello"), SmallFile("b.txt", open("b", "rb"), attributes)])  # doctest: +SKIP
    [StoreResult(id='a.txt', bytes=5, ...), StoreResult(id='b.txt', ...)]

Failure behaviour: a file whose reader fails (an ``OSError``: unreadable,
vanished) gets that error in its place and is left out; the others go on.
A write that still fails once the request queue has retried it fails every
file of the batch not committed yet (its place holds the error), after the
batch's claims are released: the queue already retried that request, so
storing the files again one by one would mostly meet the same cluster, only
slower; a re-run stores them, finding the blocks already there. A lapsed
lease raises :class:`~casstor_ops.errors.LeaseLapsedError` (no head is sent
after it). Killed at any point, every file of the batch is its old version or
its new one: a head is written only after its block list and its blocks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import BinaryIO

from cassandra import DriverException
from cassandra.cluster import Session
from cassandra.util import uuid_from_time

from casstor_ops.errors import CasstorError, LeaseLapsedError
from casstor_ops.store.blocks.chunking import make_chunker
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.coordination.commit_bound import commit_bound_s
from casstor_ops.store.coordination.heartbeat import Fence, no_fence
from casstor_ops.store.cql.request_queue import RETRYABLE, query_batches, row_batches, unlogged_batch
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.engine.commit import (COMMIT_ATTEMPTS, block_list_rows, first_bound, head_row,
                                             in_time, late_head, version_write, write_heads)
from casstor_ops.store.engine.inline import encode, fits, head_columns, inline_result
from casstor_ops.store.engine.upload import MAX_REQUESTS, Upload
from casstor_ops.store.namespace.entries import BatchedEntries, Namespace
from casstor_ops.store.records import FileAttributes, InlineContent, ObjectMeta, StoreResult, VersionRow
from casstor_ops.store.schema import StoreSettings

# A small file, stored in a batch: read whole into memory. 1 MiB is the default chunk_max, so such a file is one
# or two blocks; its lone store's five requests cost ~5 ms of CPU (client and node), as much as moving and
# hashing its megabyte, while a larger file is dominated by its bytes and keeps the streaming Upload.
SMALL_FILE_BYTES = 1024 * 1024
# What fails the batch's files not committed yet (a lapsed lease stops the caller instead); anything else is a bug.
BATCH_ERRORS = (CasstorError, OSError, DriverException, *RETRYABLE)


@dataclass
class SmallFile:
    """One file of a batch: its ID, its content (bytes, or a reader read to its end), its source's attributes and
    an S3 object's attributes (``meta``, kept in its version row)."""

    id: str
    source: bytes | BinaryIO
    attributes: FileAttributes | None = None
    meta: ObjectMeta | None = None


@dataclass
class _Item:
    """A file of the batch as it goes through the steps."""

    id: str
    data: bytes
    attributes: FileAttributes | None
    meta: ObjectMeta | None
    hashes: list[bytes] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    stored: InlineContent | None = None
    row: VersionRow | None = None     # its head row, once its version is made
    committed: bool = False
    error: Exception | None = None    # what failed it: its commit, or its entry once committed


def block_owners(items: Sequence[tuple[list[bytes], bool]], chunk_min: int, sizes: Sequence[list[int]]
                 ) -> tuple[list[bytes], set[bytes]]:
    """The distinct blocks of a batch's files (``(hashes, inline)`` each; an inline file has none to check), in
    order of first appearance, and those of them that are some file's lone small block (uploaded unclaimed).

    Example::

        >>> block_owners([([b"a"], False), ([b"b", b"a"], False), ([b"c"], True)], 10, [[5], [20, 5], [3]])
        ([b'a', b'b'], {b'a'})
    """
    distinct: dict[bytes, None] = {}
    lone: set[bytes] = set()
    for (hashes, inline), file_sizes in zip(items, sizes):
        if inline:
            continue
        distinct.update(dict.fromkeys(hashes))
        if len(hashes) == 1 and file_sizes[0] <= chunk_min:
            lone.add(hashes[0])
    return list(distinct), lone


class BatchUpload(Upload):
    """One store of a batch of small files (not reusable): the block pipeline of :class:`Upload` (checks, claims,
    uploads, shared by every file of the batch), then one commit for the batch."""

    def __init__(self, session: Session, settings: StoreSettings, statements: Statements | None = None,
                 max_requests: int = MAX_REQUESTS, fence: Fence = no_fence,
                 entries: BatchedEntries | None = None) -> None:
        super().__init__(session, settings, statements, max_requests=max_requests, fence=fence, entries=entries)
        self._lone: set[bytes] = set()
        self._content: dict[bytes, memoryview] = {}  # every block of the batch, to upload again if it vanished
        self._batch_entries = entries or BatchedEntries(Namespace.for_session(session, settings.directory_rows))

    def run_batch(self, files: Sequence[SmallFile]) -> list[StoreResult | Exception]:
        """Store every file of ``files``; for each, in order, its result or the error that failed it."""
        started = time.perf_counter()
        results: list[StoreResult | Exception | None] = [None] * len(files)
        items: list[tuple[int, _Item]] = []
        for n, small in enumerate(files):
            try:
                items.append((n, self._cut(small)))
            except OSError as err:
                results[n] = err
        if not items:
            return results  # type: ignore[return-value]  # every place is an error
        self._store([item for _, item in items])
        firsts: set[bytes] = set()
        for n, item in items:
            results[n] = item.error or self._result(item, firsts, started)
        return results  # type: ignore[return-value]  # every place is filled

    def _store(self, items: list[_Item]) -> None:
        """Every step for ``items``; a file not committed, or committed but not listed (as in a lone store: the next
        store of it lists it), gets the error that failed it. A lapsed lease, or anything but
        :data:`BATCH_ERRORS`, raises (the claims released)."""
        try:
            self._verify_blocks(items)
            self._commit(items)
        except BATCH_ERRORS as err:
            self._claims.release()
            if isinstance(err, LeaseLapsedError):
                raise
            for item in items:
                if not item.committed:
                    item.error = err
        except BaseException:
            self._claims.release()
            raise
        self._publish([item for item in items if item.committed])

    def _cut(self, small: SmallFile) -> _Item:
        """Read, cut and hash one file; an inline file keeps its content for its head."""
        data = small.source if isinstance(small.source, bytes) else small.source.read()
        item = _Item(small.id, data, small.attributes, small.meta)
        view = memoryview(data)
        cuts = [view] if len(data) <= self._settings.chunk_min else \
            [chunk.data for chunk in make_chunker(self._settings).cut_buf(view)]
        item.hashes = [block_hash(c) for c in cuts if len(c)]
        item.sizes = [len(c) for c in cuts if len(c)]
        if len(cuts) == 1 and fits(self._settings, len(data)):
            item.stored = encode(self._codec, data)
        else:
            self._content.update(zip(item.hashes, cuts))
        return item

    def _verify_blocks(self, items: list[_Item]) -> None:
        """Steps 2 and 3: check the batch's distinct blocks at once; upload the missing ones."""
        distinct, self._lone = block_owners([(i.hashes, i.stored is not None) for i in items],
                                            self._settings.chunk_min, [i.sizes for i in items])
        for digest in distinct:
            self._add(self._content[digest], digest)
        self._settle()

    def _send_check(self, claim: bool = True) -> None:
        hashes, self._to_check = self._to_check, []
        self._checks.check(hashes, on_missing=self._route)

    def _route(self, missing: list[bytes]) -> None:
        """A lone small block uploaded unclaimed (the module docstring says why), the others claimed."""
        claimed = [digest for digest in missing if digest not in self._lone]
        for digest in missing:
            if digest in self._lone:
                self._uploads.upload(digest)
        if claimed:
            self._claims.claim(claimed)

    def _commit(self, items: list[_Item]) -> None:
        """Steps 4 and 5 under the commit protocol (the module docstring)."""
        now = time.monotonic()
        bound = first_bound(self._session, now - self._oldest_check(now))
        todo = list(items)
        for _ in range(COMMIT_ATTEMPTS):
            self._recheck(time.monotonic() - bound / 2)
            started = time.monotonic()
            for item in todo:  # wall-clock: reclaim compares a version's time with its own clock
                item.row = head_row(item.id, uuid_from_time(time.time()), len(item.data), item.hashes,
                                    item.attributes, item.stored, head_columns(item.stored, self._inline_store))
            self._write_lists(todo)
            acknowledged = self._write_heads(todo, started, bound)
            if acknowledged is not None and late_head(acknowledged, self._oldest_check(acknowledged), bound):
                self._recheck(acknowledged)
                self._write_lists([item for item in items if item.committed])
            todo = [item for item in todo if not item.committed]
            if not todo:
                return
            bound = float(commit_bound_s(self._session))
        raise CasstorError(f"could not commit a batch of {len(todo)} files within the commit bound ({bound:.0f} s): "
                           f"the cluster is too slow; store them again")

    @property
    def _inline_store(self) -> bool:
        return self._settings.inline_max > 0

    def _oldest_check(self, now: float) -> float:
        return min(self._uploads.verified.values(), default=now)

    def _recheck(self, older_than: float) -> None:
        """Check again the blocks verified before ``older_than``; upload again, from memory, those that vanished."""
        stale = [digest for digest, t in self._uploads.verified.items() if t < older_than]
        if stale:
            self._reverify(stale, self._content.__getitem__)

    def _write_lists(self, items: list[_Item]) -> None:
        rows = [r for i in items if i.stored is None for r in block_list_rows(i.id, i.row.version, i.hashes, i.sizes)]
        for group in row_batches(rows):
            self._requests.submit_batch(self._st.insert_file_block, group, lambda _rows: None)
        self._requests.drain()

    def _write_heads(self, items: list[_Item], started: float, bound: float) -> float | None:
        """Write the heads of ``items`` (batched) unless the bound has passed since ``started`` or the oldest check;
        each file whose head was acknowledged is committed (the others, once the bound passed, need new versions).
        When the last head was acknowledged, or None if none was."""
        heads = [version_write(self._st, item.row, item.meta) for item in items]
        groups = query_batches(heads)
        by_id = {item.id: item for item in items}

        def send(groups: list[list[Query]]) -> list[list[Query]]:
            failed = []
            for group, future in [(g, self._session.execute_async(unlogged_batch(g))) for g in groups]:
                try:
                    future.result()
                except RETRYABLE:
                    failed.append(group)
                    continue
                for head in group:
                    by_id[head.values[0]].committed = True
            return failed

        written = write_heads(groups, send, lambda: in_time(started, self._oldest_check, bound),
                              lambda: self._fence(f"committing {len(by_id)} files ({items[0].id!r}, ...)"))
        if written.left and not written.timed_out:
            raise CasstorError(f"the heads of {sum(map(len, written.left))} files were not acknowledged; "
                               f"store them again")
        return written.acknowledged

    def _publish(self, items: list[_Item]) -> None:
        """Queue the committed ``items``' entries (written now unless the caller batches them); an error fails
        them."""
        try:
            for item in items:
                stored_size = len(item.stored.payload) if item.stored is not None else None
                self._batch_entries.publish(item.row.head(item.attributes), stored_size)
            if self._entries is None:
                self._batch_entries.flush()
        except BATCH_ERRORS as err:
            for item in items:
                item.error = err

    def _result(self, item: _Item, firsts: set[bytes], started: float) -> StoreResult:
        """What a lone store of ``item`` returns; a block this batch wrote is new for the first file that has it."""
        version = item.row.version
        if item.stored is not None:
            return replace(inline_result(item.id, len(item.data), item.stored, file_hash(item.hashes), started),
                           version=version)
        new = [(d, s) for d, s in dict(zip(item.hashes, item.sizes)).items()
               if d in self._uploads.written and d not in firsts]
        firsts.update(d for d, _ in new)
        return StoreResult(item.id, len(item.data), len(item.hashes), len(new), sum(s for _, s in new),
                           round(time.perf_counter() - started, 6), sum(self._uploads.written[d] for d, _ in new),
                           file_hash(item.hashes), version)
