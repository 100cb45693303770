"""Where a restore's bytes go when the destination is a path: whole, in place, or not at all.

A path destination is written to a temporary file beside it (flushed to
disk in the background as it grows), fsynced, given the recorded mode and
mtime, and renamed into place only when the restore checked out, so a
failed restore leaves nothing at DEST; a restore killed before that leaves
its temporary file, which the next restore to the same DEST removes
(:mod:`casstor_ops.store.trees.temporary` names each after its DEST and
writer). An existing DEST is replaced only with ``force``, checked before
and again at the rename (a hard link, which fails if DEST appeared).

Example::

    >>> restore_to_path(Restore(session, head), Path("copy.jpg"), force=False)  # doctest: +SKIP

Failures: CasstorError (one line) for a DEST that exists, is a directory or
has no parent directory, and for a write that fails (disk full, no
permission); the restore's own errors (CorruptionError, FileChangedError)
pass through. Either way nothing is left at DEST.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO, Protocol

from casstor_ops.errors import CasstorError
from casstor_ops.store.records import FileAttributes, RestoreResult
from casstor_ops.store.trees.temporary import create_temporary, fsync_directory, remove_strays


class Content(Protocol):
    """What is restored: a version's bytes, written in order to ``out`` (a
    :class:`~casstor_ops.store.engine.restore.Restore`), and its recorded attributes."""

    attributes: FileAttributes | None

    def run(self, out: BinaryIO) -> RestoreResult: ...


# A path destination is flushed to disk in the background every this many bytes, so the fsync before
# the rename only waits for the tail (it cost a restore of 268 MB ~0.25 s when it waited for it all).
SYNC_EVERY_BYTES = 32 * 1024 * 1024


def restore_to_path(restore: Content, dest: Path, force: bool) -> RestoreResult:
    """Restore into a temporary file beside ``dest``, fsync it, give it the recorded mode and mtime, then move it
    into place.

    Refuses an existing ``dest`` unless ``force`` (checked before and again
    at the rename, which never replaces without ``force``). A head without
    recorded attributes keeps the temporary file's mode (0666 less the umask).
    The temporary file stays open, so locked, until it is in place: no other
    restore's stray cleanup can take it (:mod:`casstor_ops.store.trees.temporary`).
    """
    check_destination(dest, force)
    tmp: Path | None = None
    try:
        remove_strays(dest)  # what a restore of this DEST killed earlier left behind
        tmp, file = create_temporary(dest)
        with file:
            with _SyncingWriter(file) as out:
                result = restore.run(out)
                out.sync()
            set_attributes(file, restore.attributes)
            move_into_place(tmp, dest, force)
        fsync_directory(dest.parent)
        return result
    except OSError as err:  # disk full, no permission: nothing is left at DEST
        raise CasstorError(f"cannot write {dest}: {err.strerror or err}") from None
    finally:
        if tmp is not None:  # None: nothing was created, and a name another restore drew is not ours to delete
            tmp.unlink(missing_ok=True)


def set_attributes(file: BinaryIO, attributes: FileAttributes | None) -> None:
    """The recorded mode (exact bits, not filtered by the umask) and mtime, set through the open file."""
    if attributes is not None:
        os.fchmod(file.fileno(), attributes.mode)
        os.utime(file.fileno(), ns=(time.time_ns(), attributes.mtime_ns))  # the mtime last, after every write


class _SyncingWriter:
    """Writes to ``file``, flushing what was written to disk in the background every ``every`` bytes."""

    def __init__(self, file: BinaryIO, every: int = SYNC_EVERY_BYTES) -> None:
        self._file = file
        self._every = every
        self._unsynced = 0
        self._syncer = ThreadPoolExecutor(1, thread_name_prefix="casstor-sync")
        self._sync: Future | None = None

    def __enter__(self) -> "_SyncingWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self._syncer.shutdown()

    def write(self, data: bytes) -> int:
        written = self._file.write(data)
        self._unsynced += written
        if self._unsynced >= self._every and (self._sync is None or self._sync.done()):
            self._wait_for_sync()
            self._file.flush()
            self._sync = self._syncer.submit(os.fsync, self._file.fileno())
            self._unsynced = 0
        return written

    def _wait_for_sync(self) -> None:
        if self._sync is not None:
            self._sync.result()  # a background fsync's OSError is raised here

    def sync(self) -> None:
        """Return once every byte written is on disk."""
        self._file.flush()
        self._wait_for_sync()
        os.fsync(self._file.fileno())


def move_into_place(tmp: Path, dest: Path, force: bool) -> None:
    """Rename ``tmp`` to ``dest``: replacing it only with ``force``, else CasstorError if ``dest`` exists."""
    if force:
        os.replace(tmp, dest)
    else:
        _move_no_clobber(tmp, dest)


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
