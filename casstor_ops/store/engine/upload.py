"""The store pipeline: read once, chunk, hash, deduplicate, upload, commit.

One pass over the source, in segments (:mod:`casstor_ops.store.blocks.chunking`). The
caller's thread cuts blocks; two worker threads hash them; the driver's
thread moves bytes. The file hash is computed from the block hashes
(:func:`~casstor_ops.store.blocks.hashing.file_hash`), so every byte is hashed once.

:class:`Upload` drives the parts, which share one request queue
(:class:`~casstor_ops.store.cql.request_queue.RequestQueue`) and run their handlers in
the caller's thread:

* distinct hashes not yet known to this store are checked in batches while
  chunking continues (:mod:`casstor_ops.store.blocks.existence`);
* a missing block is claimed, so of concurrent stores exactly one uploads it,
  and the others wait for its index row (:mod:`casstor_ops.store.blocks.claims`);
  except a *lone small block*, the only block of a file no larger than the
  chunker's minimum: it is uploaded unclaimed, because a claim's Paxos round
  costs the node more than the duplicate upload of such a block it could
  save (claims only save work: the same bytes land in the same row);
  and in a store with inline files, a file of 1 to ``inline_max`` bytes is
  neither checked nor uploaded: its content goes in its head row
  (:mod:`casstor_ops.store.engine.inline`);
* a claimed block's content is compressed and written, then its index row
  (:mod:`casstor_ops.store.blocks.block_uploads`), so ``new_blocks`` counts the
  blocks this store wrote;
* once every block is verified, the block list and the head row are written
  under the commit protocol (:mod:`casstor_ops.store.engine.commit`), the head
  only after the writer's lease passed ``fence``.

Bytes held for checks and uploads are bounded (``max_held_bytes``), and so
is the number of requests in flight (``max_requests``).

Example::

    >>> result = Upload(session, settings).run(open("a.bin", "rb"), "a.bin")  # doctest: +SKIP
    >>> result.new_bytes                                                       # doctest: +SKIP

Failure behaviour: whatever fails (an error, Ctrl-C), the store stops issuing
work and gives up the claims it holds or may hold (:meth:`Claims.release
<casstor_ops.store.blocks.claims.Claims.release>`), then the error propagates. A
store failing or killed at any point before its head write leaves the
previous version committed; re-running it finds the blocks already there and
completes.
"""

from __future__ import annotations

import io
import os
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import BinaryIO

from cassandra.cluster import Session

from casstor_ops.store.blocks.block_uploads import BlockUploads
from casstor_ops.store.blocks.chunking import Segment, chunks, segments
from casstor_ops.store.blocks.claims import Claims
from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.blocks.existence import CHECK_BATCH, ExistenceChecks
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.blocks.seams import Cut
from casstor_ops.store.coordination.heartbeat import Fence, no_fence
from casstor_ops.store.cql.request_queue import RequestQueue
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.commit import Commit, VerifiedBlocks
from casstor_ops.store.engine.inline import encode, fits, inline_result
from casstor_ops.store.namespace.entries import BatchedEntries, Namespace
from casstor_ops.store.progress import ProgressCallback
from casstor_ops.store.records import FileAttributes, FileInfo, InlineContent, ObjectMeta, StoreResult
from casstor_ops.store.schema import StoreSettings

MAX_REQUESTS = 32          # concurrent requests (see docs/driver.md)
MAX_HELD_BYTES = 96 * 1024 * 1024
# Block hashes are computed by worker threads (hashlib releases the GIL) while the caller's thread
# chunks the next segment: the hash is the limit.
HASH_THREADS = 2


class Upload:
    """One store of one file (not reusable)."""

    def __init__(self, session: Session, settings: StoreSettings, statements: Statements | None = None,
                 max_requests: int = MAX_REQUESTS, max_held_bytes: int = MAX_HELD_BYTES,
                 check_batch: int = CHECK_BATCH, progress: ProgressCallback | None = None,
                 fence: Fence = no_fence, entries: BatchedEntries | None = None) -> None:
        self._session = session
        self._entries = entries  # a tree store's entries, written by directory; else each at its commit
        self._settings = settings
        self._st = statements or Statements.for_session(session)
        self._requests = RequestQueue(session, max_requests, execution_profile=self._st.plain_rows)
        self._max_held = max_held_bytes
        self._progress = progress
        self._fence = fence
        self._hashes: list[bytes] = []          # the file's blocks, in order
        self._sizes: list[int] = []
        self._to_check: list[bytes] = []
        self._codec = BlockCodec.parse(settings.compression)
        self._stored: InlineContent | None = None  # an inline file's content
        # A claim is done once its block's index row is written; the two parts refer to each other.
        self._uploads = BlockUploads(self._requests, self._st, self._codec,
                                     on_indexed=lambda hashes: self._claims.indexed(hashes))
        self._checks = ExistenceChecks(self._requests, self._st, on_found=self._uploads.found, batch=check_batch)
        self._claims = Claims(self._requests, self._st, self._checks, on_claimed=self._uploads.upload)
        self._claim_missing = True  # a missing block is claimed before it is uploaded (but see run_listed)

    @property
    def new_blocks(self) -> int:
        """Blocks this store wrote (not those another store or an earlier version had)."""
        return self._uploads.new_blocks

    @property
    def new_bytes(self) -> int:
        """Bytes of the blocks this store wrote."""
        return self._uploads.new_bytes

    def _add(self, data: memoryview, digest: bytes) -> None:
        self._hashes.append(digest)
        self._sizes.append(len(data))
        if self._uploads.known(digest):
            return
        self._uploads.hold(digest, data)
        self._to_check.append(digest)
        if len(self._to_check) >= self._checks.batch:
            self._send_check()

    def _send_check(self, claim: bool | None = None) -> None:
        hashes, self._to_check = self._to_check, []
        claim = self._claim_missing if claim is None else claim
        self._checks.check(hashes, on_missing=self._claims.claim if claim else self._upload_unclaimed)

    def _upload_unclaimed(self, missing: list[bytes]) -> None:
        for digest in missing:
            self._uploads.upload(digest)

    def _settle(self) -> None:
        """Wait for every check, upload and index row submitted so far, and for blocks other writers claimed."""
        self._send_check()
        while self._requests.busy or self._uploads.unsent or self._claims.awaiting:
            if self._requests.busy:
                self._requests.poll()
            elif self._uploads.unsent:
                self._uploads.send_unsent()
            else:
                self._claims.check_awaited()

    def _limit_held(self) -> None:
        while self._requests.poll(block=False):
            pass
        while self._uploads.held_bytes > self._max_held:
            if self._to_check:
                self._send_check()
            if self._uploads.unsent and self._requests.in_flight < self._requests.max_requests:
                self._uploads.send_unsent()
            if not self._requests.poll():
                if not self._claims.awaiting:
                    break
                self._claims.check_awaited()

    def _check_or_read(self, hashes: list[bytes], read: Callable[[bytes], bytes]) -> None:
        """Check ``hashes``; upload those missing, their content from ``read(digest)``."""
        def reupload(missing: list[bytes]) -> None:
            for digest in missing:
                self._uploads.hold(digest, read(digest))
            self._claims.claim(missing)

        self._checks.check(hashes, on_missing=reupload)

    def _reverify(self, hashes: list[bytes], read: Callable[[bytes], bytes]) -> None:
        """Check ``hashes`` again; upload again those missing, their content from ``read(digest)``."""
        self._check_or_read(hashes, read)
        self._settle()

    def _take(self, segment: Segment, digests: list[bytes]) -> None:
        for data, digest in zip(segment.chunks, digests):
            self._add(data, digest)
        if self._progress:
            self._progress(segment.fresh_bytes)
        self._limit_held()

    def _read(self, reader: BinaryIO) -> int:
        """Cut, hash and dispatch every block of ``reader``; its size."""
        size = 0
        hashing: deque[tuple[Segment, Future]] = deque()
        pool: ThreadPoolExecutor | None = None  # made for the second segment: a small file is hashed here
        try:
            for segment in segments(reader, self._settings):
                size += segment.fresh_bytes
                if segment.last and not hashing:  # the whole file in one segment
                    if len(segment.chunks) == 1 and fits(self._settings, size):
                        self._keep_inline(segment)
                        continue
                    self._take(segment, _block_hashes(segment.chunks))
                    if self._is_lone_small_block(segment):
                        self._send_check(claim=False)
                    continue
                pool = pool or ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="casstor-hash")
                hashing.append((segment, pool.submit(_block_hashes, segment.chunks)))
                if len(hashing) > HASH_THREADS:
                    self._take_hashed(*hashing.popleft())
            while hashing:
                self._take_hashed(*hashing.popleft())
        finally:
            if pool is not None:
                pool.shutdown()
        return size

    def _keep_inline(self, segment: Segment) -> None:
        """The file is this one block, to be kept in its head row: no check, no upload."""
        data = segment.chunks[0]
        self._hashes.append(block_hash(data))
        self._sizes.append(len(data))
        self._stored = encode(self._codec, data)
        if self._progress:
            self._progress(segment.fresh_bytes)

    def _is_lone_small_block(self, segment: Segment) -> bool:
        """The file is this one block, no larger than the chunker's minimum (see the module docstring)."""
        return len(segment.chunks) == 1 and len(segment.chunks[0]) <= self._settings.chunk_min

    def _take_hashed(self, segment: Segment, digests: Future) -> None:
        self._take(segment, digests.result())

    def _commit(self, blocks: VerifiedBlocks, reader: BinaryIO, file_id: str, size: int,
                attributes: FileAttributes | None, object_meta: Callable[[], ObjectMeta] | None) -> FileInfo:
        return Commit(self._session, self._requests, self._st, blocks, attributes=attributes, fence=self._fence,
                      namespace=self._entries or Namespace.for_session(self._session, self._settings.directory_rows),
                      stored=self._stored, inline_store=self._settings.inline_max > 0,
                      object_meta=object_meta).run(reader, file_id, size)

    def run(self, reader: BinaryIO, file_id: str, attributes: FileAttributes | None = None,
            object_meta: Callable[[], ObjectMeta] | None = None) -> StoreResult:
        """Store everything ``reader`` yields under ``file_id`` (with the source's ``attributes``, when known, and
        an S3 object's ``object_meta``); the new head is the commit point."""
        started = time.perf_counter()
        try:
            size = self._read(reader)
            self._settle()
            blocks = VerifiedBlocks(self._hashes, self._sizes, self._uploads.verified, self._reverify)
            committed = self._commit(blocks, reader, file_id, size, attributes, object_meta)
        except BaseException:
            self._claims.release()
            raise
        if self._stored is not None:
            result = inline_result(file_id, size, self._stored, file_hash(self._hashes), started)
        else:
            result = StoreResult(file_id, size, len(self._hashes), self.new_blocks, self.new_bytes,
                                 round(time.perf_counter() - started, 6), self._uploads.new_stored_bytes,
                                 file_hash(self._hashes))
        return replace(result, version=committed.version)

    def run_listed(self, blocks: Iterable[Cut], read: Callable[[bytes], bytes], file_id: str,
                   object_meta: Callable[[], ObjectMeta] | None = None) -> FileInfo:
        """Commit under ``file_id`` the file of ``blocks``, in order, with no source to read (a multipart Complete's
        parts end to end, their seams cut again: :mod:`casstor_ops.store.blocks.seams`). A block that comes with its
        content is stored as a read block is (checked, and written when missing, unclaimed); one that comes without
        it is checked, and when missing uploaded from ``read(digest)``, which raises when it cannot give it (a
        part's block reclaimed): the store fails and commits nothing. Example:
        ``Upload(session, settings).run_listed([Cut(h, 3, b"abc")], vanished, "a")``. Failures as :meth:`run`'s;
        the new head."""
        listed: list[bytes] = []  # blocks without content, not yet checked
        seen: set[bytes] = set()
        # The blocks a seam's run cut are uploaded unclaimed, as a lone small block is: a claim is a Paxos round a
        # block (~440 in a Complete of 200 parts), to save a duplicate write that only two Completes of the same
        # bytes at once would make. Unclaimed, with a group's reads sent at once, a seam cost 11-12 ms against
        # 15-18 (the two changed together: docs/benchmarks.md).
        self._claim_missing = False
        try:
            for block in blocks:
                if block.content is not None:
                    self._add(block.content, block.digest)
                else:
                    self._hashes.append(block.digest)
                    self._sizes.append(block.size)
                    if block.digest not in seen and not self._uploads.known(block.digest):
                        seen.add(block.digest)
                        listed.append(block.digest)
                    if len(listed) >= self._checks.batch:
                        self._check_or_read(listed, read)
                        listed = []
                self._limit_held()
            self._check_or_read(listed, read)
            self._settle()
            verified = VerifiedBlocks(self._hashes, self._sizes, self._uploads.verified,
                                      lambda again, _: self._reverify(again, read))
            return self._commit(verified, io.BytesIO(), file_id, sum(self._sizes), None, object_meta)
        except BaseException:
            self._claims.release()
            raise


def _block_hashes(blocks: list[memoryview]) -> list[bytes]:
    return [block_hash(c) for c in blocks]


def source_file_hash(source: BinaryIO | str | os.PathLike, settings: StoreSettings) -> bytes:
    """The file hash a store of ``source`` would record (reads, cuts and hashes it; writes nothing)."""
    return file_hash(block_hash(c) for c in chunks(source, settings))
