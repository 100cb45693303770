"""The restore pipeline: a committed version's blocks, fetched concurrently, written in order.

The head row is read once; its version's block list (``file_blocks``) is
paged, and blocks are fetched with at most ``window`` reads in flight and
at most ``window`` blocks buffered ahead of the write position, so memory
is bounded by ``window x chunk_max`` whatever the file size. A concurrent
overwrite does not disturb a restore: it reads the version it started
with, whose rows are never deleted eagerly.

Every block is checked against its hash and size, and the whole file
against the head's hash at the end. A missing or damaged block stops the
restore at once with :class:`~casstor_ops.errors.CorruptionError` naming
the file, the offset and the block. A path destination is written to a
temporary file beside it, fsynced and renamed into place only when
everything checked out, so a failed restore leaves nothing at DEST.
Requests time out (``timeout_s``) and are retried a few times; nothing
waits forever.

Example::

    >>> with open("out.bin", "wb") as out:                              # doctest: +SKIP
    ...     Restore(session, head).run(out)
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO

from cassandra.cluster import Session

from .connection import REQUEST_TIMEOUT_S
from .errors import CasstorError, CorruptionError
from .hashing import FileHashThread, block_hash
from .inflight import RequestWindow
from .progress import Progress
from .records import FileInfo, RestoreResult
from .statements import Statements

READ_WINDOW = 16       # concurrent block reads (see docs/driver.md)
BLOCKS_PER_READ = 4    # distinct blocks per read (IN ? of 4 measured faster than single-key reads)
LIST_PAGE_ROWS = 2000  # file_blocks rows per page
RECENT_BLOCKS = 64
# Block checks run on worker threads (hashlib releases the GIL) while this thread fetches and writes
# and the file-hash thread hashes the output: hashing, not the network, is the restore's CPU cost.
VERIFY_THREADS = 2


@dataclass(frozen=True)
class _Block:
    """A fetched block on its way to the output; ``intact`` is its hash check, run by a worker thread."""

    content: bytes
    offset: int
    digest: bytes
    intact: Future


def _intact(content: bytes, digest: bytes, size: int) -> bool:
    return len(content) == size and block_hash(content) == digest


class Restore:
    """One restore of one committed version (not reusable)."""

    def __init__(self, session: Session, head: FileInfo, statements: Statements | None = None,
                 window: int = READ_WINDOW, blocks_per_read: int = BLOCKS_PER_READ,
                 timeout_s: float = REQUEST_TIMEOUT_S, progress: Progress | None = None) -> None:
        self._session = session
        self._head = head
        self._st = statements or Statements.for_session(session)
        self._window = RequestWindow(session, window, timeout_s=timeout_s)
        self._per_read = blocks_per_read
        # Twice the blocks in flight: a late block does not stall the window (memory: 2 x window x chunk).
        self._ahead = 2 * window * blocks_per_read
        self._progress = progress
        self._ready: dict[int, _Block] = {}
        self._verifier: ThreadPoolExecutor | None = None
        self._next = 0
        self._group: list[tuple[bytes, int, int]] = []  # (hash, offset, size) for the next read
        # A block repeated within a file (zeros, padding) is fetched once: later uses wait for the same
        # read, or take the copy kept among the last RECENT_BLOCKS verified ones.
        self._waiting: dict[bytes, list[int]] = {}
        self._recent: OrderedDict[bytes, _Block] = OrderedDict()

    def _block_list(self):
        statement = self._st.file_blocks.bind((self._head.id, self._head.version))
        statement.fetch_size = LIST_PAGE_ROWS
        return self._session.execute(statement)

    def _corrupt(self, offset: int, digest: bytes, what: str) -> CorruptionError:
        return CorruptionError(f"{self._head.id!r}: block {digest.hex()} at offset {offset} {what}; "
                               f"the file cannot be restored")

    def _fetched(self, group: list[tuple[bytes, int, int]], rows) -> None:
        found = {row[0]: row[1] for row in rows} if len(group) > 1 else {group[0][0]: row[0] for row in rows}
        for digest, offset, size in group:
            content = found.get(digest)
            if content is None:
                raise self._corrupt(offset, digest, "is missing")
            block = _Block(content, offset, digest, self._verifier.submit(_intact, content, digest, size))
            for waiter in self._waiting.pop(digest):
                self._ready[waiter] = block
            self._recent[digest] = block
            if len(self._recent) > RECENT_BLOCKS:
                self._recent.popitem(last=False)

    def _send_group(self) -> None:
        group, self._group = self._group, []
        if len(group) == 1:  # a single-key read is routed to a replica (token aware)
            self._window.submit(self._st.read_block, (group[0][0],), partial(self._fetched, group))
        elif group:
            self._window.submit(self._st.read_blocks, ([g[0] for g in group], len(group)),
                                partial(self._fetched, group))

    def _request(self, index: int, row) -> None:
        if row.hash in self._recent:
            self._recent.move_to_end(row.hash)
            self._ready[index] = self._recent[row.hash]
        elif row.hash in self._waiting:
            self._waiting[row.hash].append(index)
        else:
            self._waiting[row.hash] = [index]
            self._group.append((row.hash, row.block_offset, row.size))
            if len(self._group) >= self._per_read:
                self._send_group()

    def _wait(self, out: BinaryIO, file_hash: FileHashThread) -> None:
        self._send_group()  # a partial group must not wait for blocks behind the look-ahead limit
        self._window.poll()
        self._write_ready(out, file_hash)

    def _write_ready(self, out: BinaryIO, file_hash: FileHashThread) -> None:
        while self._next in self._ready:
            block = self._ready.pop(self._next)
            if not block.intact.result():
                raise self._corrupt(block.offset, block.digest, "does not match its hash")
            out.write(block.content)
            file_hash.update(block.content)
            if self._progress:
                self._progress(len(block.content))
            self._next += 1

    def run(self, out: BinaryIO) -> RestoreResult:
        """Write the version's bytes to ``out``; CorruptionError on any mismatch."""
        started = time.perf_counter()
        file_hash = FileHashThread(max_pending=self._ahead)
        count = written = 0
        try:
            self._verifier = ThreadPoolExecutor(VERIFY_THREADS, thread_name_prefix="casstor-verify")
            for index, row in enumerate(self._block_list()):
                if row.block_offset != written:
                    raise self._corrupt(row.block_offset, row.hash, f"is listed where offset {written} belongs")
                self._write_ready(out, file_hash)
                while index - self._next >= self._ahead:
                    self._wait(out, file_hash)
                self._request(index, row)
                written += row.size
                count = index + 1
            self._write_ready(out, file_hash)
            while self._next < count:
                self._wait(out, file_hash)
        except BaseException:
            file_hash.abandon()
            raise
        finally:
            self._verifier.shutdown(cancel_futures=True)
        if count != self._head.blocks or written != self._head.size:
            raise CorruptionError(f"{self._head.id!r}: the block list has {count} blocks / {written} bytes, the head "
                                  f"says {self._head.blocks} / {self._head.size}; the file cannot be restored")
        if file_hash.digest() != self._head.hash:
            raise CorruptionError(f"{self._head.id!r}: the restored bytes do not match the file hash "
                                  f"{self._head.hash.hex()}")
        return RestoreResult(self._head.id, written, count, round(time.perf_counter() - started, 6))


def restore_to_path(restore: Restore, dest: Path, force: bool) -> RestoreResult:
    """Restore into a temporary file beside ``dest``, fsync it, then move it into place.

    Refuses an existing ``dest`` unless ``force`` (checked before and again
    at the rename, which never replaces without ``force``).
    """
    check_destination(dest, force)
    tmp = dest.with_name(f".{dest.name}.casstor-{os.getpid()}-{time.monotonic_ns()}.tmp")
    try:
        with open(tmp, "xb") as out:
            result = restore.run(out)
            out.flush()
            os.fsync(out.fileno())
        if force:
            os.replace(tmp, dest)
        else:
            _move_no_clobber(tmp, dest)
        _fsync_dir(dest.parent)
        return result
    except OSError as err:  # disk full, no permission: nothing is left at DEST
        raise CasstorError(f"cannot write {dest}: {err.strerror or err}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _move_no_clobber(tmp: Path, dest: Path) -> None:
    """Rename ``tmp`` to ``dest`` unless ``dest`` exists (a hard link fails atomically if it does)."""
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise CasstorError(f"{dest}: already exists (use --force to overwrite)") from None
    except OSError:  # no hard links on this file system: check, then rename (a small race)
        check_destination(dest, force=False)
        os.replace(tmp, dest)
        return
    os.unlink(tmp)


def check_destination(dest: Path, force: bool) -> None:
    if dest.is_dir():
        raise CasstorError(f"{dest}: is a directory; give a file path")
    if dest.exists() and not force:
        raise CasstorError(f"{dest}: already exists (use --force to overwrite)")
    if not dest.parent.is_dir():
        raise CasstorError(f"{dest.parent}: no such directory")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
