"""Small files of a tree restored in batches: their reads, checks and flush to disk shared across files.

A tree restore (:func:`~casstor_ops.store.bulk.tree.restore_tree`) groups
its small files (block-stored, at most :data:`SMALL_FILE_BYTES`) in listing
order, so mostly by directory, with :func:`batches` (at most
:data:`BATCH_FILES` files and :data:`BATCH_BYTES` bytes). One
:class:`BatchRestore` then restores a batch together:

1. every file's block list, one request each, pipelined (``file_blocks``
   is keyed by the composite ``(id, version)``: ``id IN ? AND version IN ?``
   would read the cross product, N x N partitions, and Cassandra has no IN
   on a tuple of partition key columns), each checked against its head as
   a single restore checks it (:func:`~casstor_ops.store.engine.restore.checked_list`:
   offsets, block count, size, file hash);
2. the distinct blocks of all of them, ``hash IN ? LIMIT ?``, in reads of at
   most :data:`READ_BLOCKS` blocks and :data:`READ_BYTES` bytes as listed
   (:func:`read_groups`: a response stays far below the driver's frame
   limits), every block decoded and checked against its hash and size
   (:func:`~casstor_ops.store.engine.restore.checked_blocks`);
3. each file written to a temporary file beside its destination with its
   recorded mode and mtime, all of them flushed to disk at once
   (:func:`~casstor_ops.store.trees.temporary.sync_files`: one ``syncfs``),
   then each renamed into place (never over an existing file without
   ``force``), then each directory touched fsynced once. What is renamed
   into place is on disk when :meth:`BatchRestore.restore` returns, as for
   a single restore (``docs/safety.md``).

Example::

    >>> for batch in batches(small_heads):                              # doctest: +SKIP
    ...     left = BatchRestore(store, "/restore", "photos/").restore([(h, row_of(h)) for h in batch])
    ...     # each (head, row) in ``left``: restore it alone (restore_below), which reports its error

Failures: this is the fast path for files that check out, and only that.
A file with any doubt (a block list that is not its head's, a block
missing or damaged, a destination that exists without ``force``, a write,
rename or directory that fails) is left, nothing of it under its final name
(its temporary file removed), for the caller to restore alone
(:func:`~casstor_ops.store.bulk.tree_files.restore_below`): that path
retries, tells a change from corruption and raises the error its report row
shows, exactly as before batching. A request that fails after the request
queue's retries leaves every file not yet renamed. A directory whose fsync
fails after its renames fails its files (``cannot write``), as a single
restore does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, BinaryIO

from casstor_ops.errors import CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.block_list import carried
from casstor_ops.store.bulk.tree_files import FAILED, FILE_ERRORS, RESTORED, one_line, restore_target
from casstor_ops.store.cql.request_queue import RequestQueue
from casstor_ops.store.cql.runs import runs
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.batch_upload import SMALL_FILE_BYTES  # stored in batches up to it, restored so too
from casstor_ops.store.engine.restore import (READ_CONCURRENCY, FoundBlock, blocks_read, checked_blocks,
                                              checked_list, found_blocks)
from casstor_ops.store.records import FileInfo
from casstor_ops.store.trees.destinations import check_destination, move_into_place, set_attributes
from casstor_ops.store.trees.path_ids import path_to_id
from casstor_ops.store.trees.temporary import create_temporary, fsync_directory, remove_strays, sync_files

BATCH_FILES = 64             # files per batch (measured in docs/benchmarks.md)
BATCH_BYTES = 8 << 20        # bytes per batch: what a worker holds in memory, at most
READ_BLOCKS = 64             # blocks per read of the batch, at most
READ_BYTES = 1 << 20         # bytes per read as listed (plaintext; a stored block is at most a little larger)

Pair = tuple[FileInfo, dict[str, Any]]


def batched(head: FileInfo) -> bool:
    """Whether ``head`` is restored in a batch: stored in blocks, at most :data:`SMALL_FILE_BYTES` (an inline file
    and a large one are restored alone). Example: True for a 24 KB file of one block."""
    return not head.is_inline and head.size <= SMALL_FILE_BYTES


def batches(heads: Iterable[FileInfo], max_files: int = BATCH_FILES, max_bytes: int = BATCH_BYTES
            ) -> Iterator[list[FileInfo]]:
    """``heads`` in order, cut into runs of at most ``max_files`` files and ``max_bytes`` bytes (a file larger
    than ``max_bytes`` alone). Example: sizes 5, 5, 5 with ``max_bytes=10`` give ``[[5, 5], [5]]``."""
    return runs(heads, attrgetter("size"), max_files, max_bytes)


def read_groups(sizes: dict[bytes, int], max_blocks: int = READ_BLOCKS, max_bytes: int = READ_BYTES
                ) -> list[list[bytes]]:
    """The hashes of ``sizes`` (hash -> bytes), in order, cut into reads of at most ``max_blocks`` blocks and
    ``max_bytes`` bytes (a larger block alone). Example: ``read_groups({a: 600, b: 600}, max_bytes=1000)`` is
    ``[[a], [b]]``."""
    return [[digest for digest, _ in run] for run in runs(sizes.items(), itemgetter(1), max_blocks, max_bytes)]


@dataclass
class _File:
    """One file of a batch on its way: its checked block list, its content, its temporary file."""

    head: FileInfo
    row: dict[str, Any]
    target: Path
    rows: list[tuple[int, bytes, int]] = field(default_factory=list)
    content: bytes = b""
    tmp: Path | None = None
    out: BinaryIO | None = None


def _by_directory(files: list[_File]) -> dict[Path, list[_File]]:
    grouped: dict[Path, list[_File]] = {}
    for file in files:
        grouped.setdefault(file.target.parent, []).append(file)
    return grouped


class BatchRestore:
    """One restore of one batch of small files below ``dest_dir`` (see the module docstring; not reusable)."""

    def __init__(self, store: Store, dest_dir: str, below: str = "", force: bool = False,
                 concurrency: int = READ_CONCURRENCY) -> None:
        self._session = store.session
        self._st = Statements.for_session(store.session)
        self._dest_dir, self._below, self._force = dest_dir, below, force
        self._concurrency = concurrency
        self._found: dict[bytes, FoundBlock] = {}

    def restore(self, batch: list[Pair]) -> list[Pair]:
        """Restore every file of ``batch`` (head, report row) that checks out, filling its row; the pairs left for
        the caller to restore alone (see the module docstring)."""
        files, left = self._destinations(batch)
        try:
            self._read(files)
        except FILE_ERRORS:  # a request that kept failing: each file alone reports its own error
            return left + [(f.head, f.row) for f in files]
        files, unchecked = self._checked(files)
        return left + unchecked + self._write(files)

    def _destinations(self, batch: list[Pair]) -> tuple[list[_File], list[Pair]]:
        """The files whose destination may be written (``force``, or none there yet; its directory made), and the
        others."""
        files, left = [], []
        for head, row in batch:
            try:
                target = Path(restore_target(self._dest_dir, head.id, self._below))
                target.parent.mkdir(parents=True, exist_ok=True)
                check_destination(target, self._force)
            except (CasstorError, OSError):
                left.append((head, row))
                continue
            files.append(_File(head, row, target))
        return files, left

    def _read(self, files: list[_File]) -> None:
        """Every file's block list, then the distinct blocks of all of them (``hash -> (codec, content)``)."""
        requests = RequestQueue(self._session, self._concurrency, execution_profile=self._st.plain_rows)
        try:
            for file in files:
                rows = carried(file.head)
                if rows is not None:  # the entry listed carries the list: nothing to read
                    file.rows.extend(rows)
                else:
                    requests.submit(self._st.file_blocks, (file.head.id, file.head.version),
                                    lambda rows, file=file: file.rows.extend(rows))
            requests.drain()
            sizes = {digest: size for file in files for _, digest, size in file.rows}
            for group in read_groups(sizes):
                requests.submit(*blocks_read(self._st, group), self._keep)
            requests.drain()
        except BaseException:
            requests.cancel()
            requests.settle(5.0)
            raise

    def _keep(self, rows: list[tuple[bytes, str | None, bytes | None]]) -> None:
        self._found.update(found_blocks(rows))

    def _checked(self, files: list[_File]) -> tuple[list[_File], list[Pair]]:
        """The files whose list is their head's and whose blocks are all found and intact, content joined; the
        others left."""
        good, left = [], []
        for file in files:
            try:
                rows = list(checked_list(file.head, file.rows))
                blocks = [self._found[digest].listed(digest, offset, size) for offset, digest, size in rows]
                file.content = b"".join(checked_blocks(file.head.id, blocks))
            except (CasstorError, KeyError):  # a list not the head's, a block missing or damaged
                left.append((file.head, file.row))
                continue
            good.append(file)
        return good, left

    def _write(self, files: list[_File]) -> list[Pair]:
        """Write, flush, rename and fsync (module docstring, step 3); the pairs of the files left."""
        left: list[Pair] = []
        written = [file for group in self._ready_directories(files, left).values() for file in group
                   if self._written(file, left)]
        try:
            sync_files(file.out for file in written)
        except OSError:
            for file in written:
                self._leave(file, left)
            return left
        placed = [file for file in written if self._placed(file, left)]
        for directory, group in _by_directory(placed).items():
            self._fsync(directory, group)
        return left

    def _ready_directories(self, files: list[_File], left: list[Pair]) -> dict[Path, list[_File]]:
        """The files by directory, each directory cleared of what killed restores of its files left (one listing of
        it); the files of a directory that cannot be listed are left."""
        ready = {}
        for directory, group in _by_directory(files).items():
            try:
                remove_strays(*(file.target for file in group))
            except OSError:
                for file in group:
                    self._leave(file, left)
                continue
            ready[directory] = group
        return ready

    def _written(self, file: _File, left: list[Pair]) -> bool:
        """Write ``file``'s temporary file with its mode and mtime; False (and ``file`` left) when that fails."""
        try:
            file.tmp, file.out = create_temporary(file.target)
            file.out.write(file.content)
            file.out.flush()
            set_attributes(file.out, file.head.attributes)
        except OSError:
            self._leave(file, left)
            return False
        file.content = b""
        return True

    def _placed(self, file: _File, left: list[Pair]) -> bool:
        """Rename ``file`` into place (unlocked only then); False (and ``file`` left) when that fails."""
        try:
            move_into_place(file.tmp, file.target, self._force)
        except (CasstorError, OSError):
            self._leave(file, left)
            return False
        file.out.close()
        file.row.update(path=path_to_id(str(file.target)), bytes=file.head.size, blocks=file.head.blocks,
                        status=RESTORED)
        return True

    @staticmethod
    def _fsync(directory: Path, files: list[_File]) -> None:
        """Make the renames into ``directory`` durable; if that fails, its files fail as a single restore's would."""
        try:
            fsync_directory(directory)
        except OSError as err:
            for file in files:
                file.row.update(status=FAILED, error=one_line(CasstorError(f"cannot write {file.target}: "
                                                                           f"{err.strerror or err}")))

    @staticmethod
    def _leave(file: _File, left: list[Pair]) -> None:
        """Leave ``file`` for its restore alone: its temporary file removed, nothing under its final name."""
        if file.out is not None:
            file.out.close()
        if file.tmp is not None:
            file.tmp.unlink(missing_ok=True)
        file.content = b""
        left.append((file.head, file.row))
