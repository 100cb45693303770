"""The restore pipeline: a committed version's blocks, fetched concurrently, written in order.

The head row is read once; its version's block list (``file_blocks``) is
paged, and blocks are fetched ``blocks_per_read`` at a time (``IN ?``;
by default as many as hold ``READ_BYTES`` of the file's mean block, 1 to
16) with at most ``concurrency`` reads in flight and at most
``2 x concurrency x blocks_per_read`` blocks between the write position and the
last block asked for, so memory is bounded by that many ``chunk_max``
whatever the file size. A concurrent overwrite or removal does not
disturb a restore by itself: it reads the version it started with, whose
rows are never deleted eagerly. A reclaim (online) may free that version's
blocks and block list meanwhile, though: a block found missing, or a list
found short, is therefore checked against the head, re-read, and reported
as :class:`~casstor_ops.errors.FileChangedError` ("the file changed during
restore; run again", exit 12) when the head has moved, never as corruption.
The restore does not hold a read lease that reclaim would respect instead:
that would make every restore a writer (a lease row and its heartbeat),
and an online reclaim would wait for the longest restore; re-reading the
head costs one read, and only when something is missing.

An inline file (:mod:`casstor_ops.store.engine.inline`) is its head's content,
read with the head or in one more read, checked against its size and file
hash in the same way.

The block list is read whole and checked against the head before the
first block is read, so before any byte is written (a GET sends none):
offsets contiguous from 0, the head's count and size, and the head's file
hash (:func:`~casstor_ops.store.blocks.hashing.file_hash`): rows each intact but
out of order (two swapped) pass every check but the last, which a stream
would otherwise have run only after sending the whole wrong file. A list of
at most ``HELD_LIST_BLOCKS`` rows is kept from that read (~80 bytes a
block); a longer one is read again as it is restored, and checked again as
it goes (a second read that differs, another replica's, is told only at its
end). Every block is decoded (decompressed, by its recorded codec, on the
worker threads that check it: :mod:`casstor_ops.store.blocks.codec`) and its
plaintext checked against its hash and size. A list that does not match,
or a missing or damaged block, stops the restore at once with
:class:`~casstor_ops.errors.CorruptionError` naming the file (and the offset
and the block) (FileChangedError instead when the file changed, above: a
list found short). Nothing is written to a path here: a path destination
is :mod:`casstor_ops.store.trees.destinations`' (whole or not at all).
Requests time out (``timeout_s``) and are retried a few times; nothing
waits forever.

Example::

    >>> with open("out.bin", "wb") as out:                              # doctest: +SKIP
    ...     Restore(session, head).run(out)
"""

from __future__ import annotations

import time
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import BinaryIO, NamedTuple

from cassandra.cluster import Session

from casstor_ops.cluster.connection import REQUEST_TIMEOUT_S
from casstor_ops.errors import CasstorError, CorruptionError, FileChangedError
from casstor_ops.store.blocks.block_list import ListRow, carried
from casstor_ops.store.blocks.codec import DamagedBlock, decode
from casstor_ops.store.blocks.hashing import block_hash, file_hasher
from casstor_ops.store.cql.request_queue import RequestQueue
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.engine import inline
from casstor_ops.store.progress import ProgressCallback
from casstor_ops.store.records import FileAttributes, FileInfo, InlineContent, RestoreResult

READ_CONCURRENCY = 8        # concurrent block reads (see docs/driver.md)
BLOCKS_PER_READ = 16   # distinct blocks per read, at most (IN ? of 16: a third less client CPU per MB than 4)
# What a read aims to hold: 16 blocks of 48 KiB, where 16 was measured best. Larger blocks, fewer per read, so
# the blocks held ahead stay near 2 x READ_CONCURRENCY x READ_BYTES (12 MiB) of plaintext whatever their size.
READ_BYTES = 16 * 48 * 1024
LIST_PAGE_ROWS = 2000  # file_blocks rows per page
# A block list of at most this many rows is kept from its check for the restore (~20 MB: files of ~11 GB in 48 KiB
# blocks, ~45 GB in the default 192 KiB ones); a longer one is read twice, so memory stays bounded.
HELD_LIST_BLOCKS = 250_000
RECENT_BLOCKS = 64
# Block checks run on worker threads (hashlib releases the GIL), one task per read, while this thread
# dispatches and writes: hashing is the restore's own CPU cost.
VERIFY_THREADS = 2


class StoredBlock(NamedTuple):
    """A block of a file as read to restore it: its recorded codec and stored content, and its hash, offset and
    size as the file's block list has them."""

    codec: str | None
    payload: bytes
    hash: bytes
    offset: int
    size: int


class FoundBlock(NamedTuple):
    """A block as a blocks read (:func:`blocks_read`) found it: its recorded codec and its stored content."""

    codec: str | None
    payload: bytes

    def listed(self, digest: bytes, offset: int, size: int) -> StoredBlock:
        """This block where a block list names it: as :func:`checked_blocks` takes it."""
        return StoredBlock(self.codec, self.payload, digest, offset, size)


class BlockInRead(NamedTuple):
    """Where a block listed for the restore is found: its place among its read's blocks, its hash, and the
    read's decode-and-check task (its result: the read's plaintexts, in order)."""

    place: int
    hash: bytes
    check: Future


def checked_blocks(file_id: str, blocks: list[StoredBlock]) -> list[bytes]:
    """The checked plaintexts of ``blocks`` of ``file_id``, in order.

    Raises CorruptionError (:func:`damaged`) naming the first block that does not decode to its size or does
    not match its hash. Example: ``checked_blocks("a", [StoredBlock(None, b"x", block_hash(b"x"), 0, 1)])`` is
    ``[b"x"]``."""
    plain = []
    for codec, payload, digest, offset, size in blocks:
        try:
            content = decode(codec, payload, size)
        except DamagedBlock as err:
            raise damaged(file_id, offset, digest, str(err)) from None
        if block_hash(content) != digest:
            raise damaged(file_id, offset, digest, "does not match its hash")
        plain.append(content)
    return plain


class ShortList(CorruptionError):
    """A block list whose count or bytes are not its head's: what a reclaim that deleted it meanwhile leaves."""


def damaged(file_id: str, offset: int, digest: bytes, what: str) -> CorruptionError:
    """The error of block ``digest`` at ``offset`` of ``file_id``: ``what`` is wrong with it."""
    return CorruptionError(f"{file_id!r}: block {digest.hex()} at offset {offset} {what}; the file cannot be restored")


def checked_list(head: FileInfo, rows: Iterable[tuple[int, bytes, int]]) -> Iterator[tuple[int, bytes, int]]:
    """The ``(offset, hash, size)`` rows of ``head``'s block list as they come, each checked to start where the
    ones before it end; once all are read, their count and bytes (else :class:`ShortList`) and their hashes, in
    order, against the head's file hash (else CorruptionError: rows swapped or replaced).

    Example: ``list(checked_list(head, rows))`` is ``rows`` for an intact list."""
    hasher = file_hasher()
    count = written = 0
    for offset, digest, size in rows:
        if offset != written:
            raise damaged(head.id, offset, digest, f"is listed where offset {written} belongs")
        hasher.update(digest)
        yield offset, digest, size
        written += size
        count += 1
    if count != head.blocks or written != head.size:
        raise ShortList(f"{head.id!r}: the block list has {count} blocks / {written} bytes, the head says "
                        f"{head.blocks} / {head.size}; the file cannot be restored")
    if hasher.digest() != head.hash:
        raise CorruptionError(f"{head.id!r}: the block list does not match the file hash {head.hash.hex()} (rows "
                              f"swapped or replaced); the file cannot be restored")


def _with_offsets(digests: list[bytes], sizes: array) -> Iterator[ListRow]:
    """The rows of a list kept as its hashes and sizes."""
    offset = 0
    for digest, size in zip(digests, sizes):
        yield ListRow(offset, digest, size)
        offset += size


def blocks_read(st: Statements, hashes: list[bytes]) -> Query:
    """The read of the distinct blocks ``hashes``: by key for one (a single-key read
    is routed to a replica, token aware), ``IN ?`` for several. Example: ``blocks_read(st, [h])`` is
    ``Query(st.read_block, (h,))``."""
    if len(hashes) == 1:
        return Query(st.read_block, (hashes[0],))
    return Query(st.read_blocks, (hashes, len(hashes)))


def found_blocks(rows: Iterable[tuple[bytes, str | None, bytes | None]]) -> dict[bytes, FoundBlock]:
    """The blocks a :func:`blocks_read` answered with ``rows`` (hash, codec, content), by hash. A row without
    content (a cell deleted under the read) is left out: missing, as a block with no row is. Example:
    ``found_blocks([(h, None, b"x"), (g, None, None)])`` is ``{h: FoundBlock(None, b"x")}``."""
    return {digest: FoundBlock(codec, content) for digest, codec, content in rows if content is not None}


def default_blocks_per_read(head: FileInfo) -> int:
    """How many of ``head``'s blocks one read asks for: about ``READ_BYTES`` of its mean block, 1 to
    ``BLOCKS_PER_READ``. Example: 16 for a file of 48 KiB blocks, 2 for one of 300 KiB blocks."""
    mean = head.size // max(1, head.blocks)
    return max(1, min(BLOCKS_PER_READ, READ_BYTES // max(1, mean)))


class Restore:
    """One restore of one committed version (not reusable)."""

    def __init__(self, session: Session, head: FileInfo, statements: Statements | None = None,
                 concurrency: int = READ_CONCURRENCY, blocks_per_read: int | None = None,
                 timeout_s: float = REQUEST_TIMEOUT_S, progress: ProgressCallback | None = None) -> None:
        self._session = session
        self._head = head
        self._st = statements or Statements.for_session(session)
        self._requests = RequestQueue(session, concurrency, timeout_s=timeout_s, execution_profile=self._st.plain_rows)
        self._per_read = blocks_per_read or default_blocks_per_read(head)
        # Twice the blocks in flight: a late block does not stall the reads behind it
        # (memory: 2 x concurrency x blocks_per_read x chunk_max at most).
        self._ahead = 2 * concurrency * self._per_read
        self._progress = progress
        self._ready: dict[int, BlockInRead] = {}  # by the block's index in the list
        self._verifier: ThreadPoolExecutor | None = None
        self._next = 0
        self._group: list[ListRow] = []  # the blocks of the next read
        # A block repeated within a file (zeros, padding) is fetched once: later uses wait for the same
        # read, or take the copy kept among the last RECENT_BLOCKS fetched ones.
        self._waiting: dict[bytes, list[int]] = {}
        self._recent: OrderedDict[bytes, BlockInRead] = OrderedDict()

    def _list_rows(self):
        rows = carried(self._head)
        if rows is not None:
            return rows
        statement = self._st.file_blocks.bind((self._head.id, self._head.version))
        statement.fetch_size = LIST_PAGE_ROWS
        return self._session.execute(statement)

    def _checked(self, rows: Iterable[tuple[int, bytes, int]]) -> Iterator[tuple[int, bytes, int]]:
        """:func:`checked_list` of ``rows``, a short list FileChangedError when the head moved on meanwhile."""
        try:
            yield from checked_list(self._head, rows)
        except ShortList as short:
            raise self._unless_changed(short) from None

    def _block_list(self) -> Iterable[tuple[int, bytes, int]]:
        """The version's block list, read whole and checked (:meth:`_checked`) before any block is read; kept
        if it has at most ``HELD_LIST_BLOCKS`` rows, else read again (and checked again as it is restored)."""
        digests: list[bytes] | None = []
        sizes = array("q")
        for _, digest, size in self._checked(self._list_rows()):
            if digests is not None:
                digests.append(digest)
                sizes.append(size)
                if len(digests) > HELD_LIST_BLOCKS:
                    digests, sizes = None, array("q")
        return _with_offsets(digests, sizes) if digests is not None else self._checked(self._list_rows())

    def _unless_changed(self, error: CorruptionError) -> CasstorError:
        """``error`` if the version being restored is still kept, else FileChangedError.

        Only for what forget and reclaim do to a version no longer kept (its row dropped by forget, then its
        blocks or block list rows by reclaim): reclaim keeps every block a version row names, so a kept version
        with a block missing is damaged. Content that fails its hash is corruption whatever the versions say.
        """
        row = self._session.execute(self._st.one_version, (self._head.id, self._head.version)).one()
        if row is not None and not row.deleted:
            return error
        return FileChangedError(f"{self._head.id!r}: the file changed during restore (overwritten or removed, and "
                                f"the old version forgotten and its blocks reclaimed); run again")

    def _fetched(self, group: list[ListRow], rows) -> None:
        found = found_blocks(rows)
        blocks = []
        for offset, digest, size in group:
            if digest not in found:
                raise self._unless_changed(damaged(self._head.id, offset, digest, "is missing"))
            blocks.append(found[digest].listed(digest, offset, size))
        check = self._check(blocks)
        for place, stored in enumerate(blocks):
            block = BlockInRead(place, stored.hash, check)
            for waiter in self._waiting.pop(stored.hash):
                self._ready[waiter] = block
            self._recent[stored.hash] = block
            if len(self._recent) > RECENT_BLOCKS:
                self._recent.popitem(last=False)

    def _check(self, blocks: list[StoredBlock]) -> Future:
        """The decoding and checking of one read's blocks: one task per read, not per block (it decompresses, and
        zstd releases the GIL, and hashes); done here when one read holds the whole file."""
        if self._verifier is not None:
            return self._verifier.submit(checked_blocks, self._head.id, blocks)
        done: Future = Future()
        try:
            done.set_result(checked_blocks(self._head.id, blocks))
        except CorruptionError as err:  # raised where the block is written, as a worker's would be
            done.set_exception(err)
        return done

    def _send_group(self) -> None:
        group, self._group = self._group, []
        if group:
            self._requests.submit(*blocks_read(self._st, [row.hash for row in group]), partial(self._fetched, group))

    def _request(self, index: int, digest: bytes, offset: int, size: int) -> None:
        if digest in self._recent:
            self._recent.move_to_end(digest)
            self._ready[index] = self._recent[digest]
        elif digest in self._waiting:
            self._waiting[digest].append(index)
        else:
            self._waiting[digest] = [index]
            self._group.append(ListRow(offset, digest, size))
            if len(self._group) >= self._per_read:
                self._send_group()

    def _wait(self, out: BinaryIO) -> None:
        self._send_group()  # a partial group must not wait for blocks behind the look-ahead limit
        self._requests.poll()
        self._write_ready(out)

    def _write_ready(self, out: BinaryIO) -> None:
        ready = self._ready
        while self._next in ready:
            block = ready.pop(self._next)
            content = block.check.result()[block.place]  # a damaged block's CorruptionError is raised here
            out.write(content)
            if self._progress:
                self._progress(len(content))
            self._next += 1

    def _inline_content(self) -> InlineContent:
        """An inline head's content: as read with the head, else read now (FileChangedError if the head moved)."""
        head = self._head
        if head.inline is not None:
            return head.inline
        row = self._session.execute(self._st.inline_content, (head.id, head.version)).one()
        if row is None:
            raise FileChangedError(f"{head.id!r}: the file changed during restore (overwritten or removed); run again")
        if row.content is None:
            raise CorruptionError(f"{head.id!r}: its head holds no content; the file cannot be restored")
        return InlineContent(row.codec, row.content)

    def _run_inline(self, out: BinaryIO, started: float) -> RestoreResult:
        content = inline.checked(self._head, self._inline_content())
        out.write(content)
        if self._progress:
            self._progress(len(content))
        return RestoreResult(self._head.id, len(content), 0, round(time.perf_counter() - started, 6))

    @property
    def attributes(self) -> FileAttributes | None:
        """The mode and mtime recorded with the version being restored (None: stored from a stream)."""
        return self._head.attributes

    def run(self, out: BinaryIO) -> RestoreResult:
        """Write the version's bytes to ``out``; CorruptionError on any mismatch."""
        started = time.perf_counter()
        if self._head.is_inline:
            return self._run_inline(out, started)
        rows = self._block_list()  # checked whole: nothing is read or written for a list that is not the head's
        count = written = 0
        if self._head.blocks > self._per_read:  # else one read: no thread to hand it to (a small file's GET)
            self._verifier = ThreadPoolExecutor(VERIFY_THREADS, thread_name_prefix="casstor-verify")
        try:
            for index, (offset, digest, size) in enumerate(rows):
                self._write_ready(out)
                while index - self._next >= self._ahead:
                    self._wait(out)
                self._request(index, digest, offset, size)
                written += size
                count = index + 1
            self._write_ready(out)
            while self._next < count:
                self._wait(out)
        finally:
            if self._verifier is not None:
                self._verifier.shutdown(cancel_futures=True)
        return RestoreResult(self._head.id, written, count, round(time.perf_counter() - started, 6))
