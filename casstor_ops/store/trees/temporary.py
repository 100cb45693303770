"""A restore's temporary file: its name, who owns it, and removing the ones a killed restore left behind.

A path restore writes ``DEST``'s content to a temporary file beside it and
renames it into place only when every block checked out
(:func:`~casstor_ops.store.trees.destinations.restore_to_path`). A restore killed
meanwhile (``kill -9``, a power cut) leaves that file behind, so the name
says whose it is: ``.casstor-<tag>-<pid>-<random>.tmp``, where ``tag`` is
12 hex digits of BLAKE2b of DEST's basename (the basename itself could be
255 bytes long: no room for it beside a prefix) and ``pid`` the writer's
process id. The writer also holds an exclusive ``flock`` on the file
until it is renamed into place.

The next restore to the same DEST calls :func:`remove_strays` first: it
removes the temporary files of that DEST (same tag) whose writer is gone,
i.e. all of (1) the file was last modified :data:`STRAY_MIN_AGE_S` ago or
more, (2) no process with that pid exists on this host and (3) the file's
lock can be taken at once. The writer holds its lock from just after the
create until after the rename into place (the mode and mtime are set
through the open file), so (3) alone keeps a live restore's file, on this
host or on another host of a shared file system (NFS emulates ``flock``
with its own locks), except in the instant between the create and the
lock, which (1) covers (a clock skew between hosts of more than the margin
would defeat it). (2) spares a live writer of this host even where locks
are not enforced. A pid reused by an unrelated process, or a number beyond
this host's range of pids, keeps a stray until that process ends (the safe
side). Files of other DESTs and any other name (``.casstor-<16 hex>.tmp``
of older versions, which say nothing of their owner) are left alone. The
rename is made durable by :func:`fsync_directory`.

Example::

    >>> path, file = create_temporary(Path("/data/big.iso"))   # doctest: +SKIP
    >>> path.name                                              # doctest: +SKIP
    '.casstor-5d1e0a77c2f4-4242-9f3a61c0.tmp'
    >>> remove_strays(Path("/data/big.iso"))                   # doctest: +SKIP
    []

Failures: :func:`create_temporary` raises OSError (no permission, disk
full); :func:`remove_strays` never raises for a file it cannot inspect or
remove (it keeps it), only for a directory it cannot list.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import re
import secrets
import time
from pathlib import Path
from typing import BinaryIO, Iterable, NamedTuple

# A stray younger than this may be a writer's between its create and its lock: kept. That gap is microseconds
# (create_temporary locks right after the create); the margin absorbs a few seconds of skew between this host's
# clock and a file server's (which stamps the mtime), and stays short so that the next restore after a killed
# one, normally seconds later, removes its file.
STRAY_MIN_AGE_S = 10
_NAME = re.compile(r"\.casstor-(?P<tag>[0-9a-f]{12})-(?P<pid>[1-9][0-9]{0,9})-[0-9a-f]{8}\.tmp")


class Owner(NamedTuple):
    """What a temporary file's name says: which DEST (its tag) and which process wrote it."""

    tag: str
    pid: int


def dest_tag(dest: Path) -> str:
    """12 hex digits naming ``dest``'s basename in its temporary files (e.g. ``'5d1e0a77c2f4'``)."""
    return hashlib.blake2b(os.fsencode(dest.name), digest_size=6).hexdigest()


def temporary_name(dest: Path, pid: int, nonce: str) -> str:
    """``.casstor-<tag>-<pid>-<nonce>.tmp``: at most 43 bytes, whatever DEST's name (``nonce``: 8 hex digits)."""
    return f".casstor-{dest_tag(dest)}-{pid}-{nonce}.tmp"


def owner_of(name: str) -> Owner | None:
    """The tag and pid of a temporary file's name; None for any other name."""
    match = _NAME.fullmatch(name)
    return Owner(match["tag"], int(match["pid"])) if match else None


def create_temporary(dest: Path) -> tuple[Path, BinaryIO]:
    """A new empty temporary file beside ``dest``, open for writing and locked for as long as it stays open.

    ``xb`` never opens an existing file, so a name drawn twice is drawn again
    rather than shared.
    """
    while True:
        path = dest.parent / temporary_name(dest, os.getpid(), secrets.token_hex(4))
        try:
            file = open(path, "xb")
        except FileExistsError:
            continue
        fcntl.flock(file, fcntl.LOCK_EX)  # never blocks: the file is new and ours
        return path, file


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid may exist on this host (another user's counts; so does a number beyond
    the range of pids, which is no process of this host to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_strays(dest: Path, *beside: Path) -> list[Path]:
    """Remove the temporary files of ``dest`` (and of the DESTs ``beside`` it, in the same directory: one listing
    for them all) left by restores that are gone (see the module docstring); the removed."""
    tags = {dest_tag(d) for d in (dest, *beside)}
    removed = []
    for entry in os.scandir(dest.parent):
        owner = owner_of(entry.name)
        if owner is None or owner.tag not in tags or not _old_enough(entry) or pid_alive(owner.pid):
            continue
        if _remove_if_unlocked(Path(entry.path)):
            removed.append(Path(entry.path))
    return removed


def _old_enough(entry: os.DirEntry) -> bool:
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime >= STRAY_MIN_AGE_S
    except OSError:  # gone meanwhile
        return False


def _remove_if_unlocked(path: Path) -> bool:
    """Unlink ``path`` if its lock can be taken at once (no writer holds it); False when kept."""
    try:
        with open(path, "rb") as file:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink()  # under the lock: a writer still alive elsewhere could not have taken it
            return True
    except OSError:  # locked (a live writer elsewhere), or gone or unreadable meanwhile: keep it
        return False


def fsync_directory(path: Path | str) -> None:
    """Flush ``path``'s entries to disk: a rename into it survives a crash once this returns."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _load_syncfs():
    """libc's ``syncfs(2)`` (Linux), or None where there is none."""
    # From the symbols the process has loaded (libc is among them), not ctypes.util.find_library("c"): that runs
    # `/sbin/ldconfig -p` in a subprocess, a fork and exec at the import of every casstor command (1.5-6 ms alone
    # here; within the noise of the CLI's 0.16 s import in 60 alternated pairs, so kept for the process it spares).
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError, TypeError):
        return None


_SYNCFS = _load_syncfs()


def sync_files(files: Iterable[BinaryIO]) -> None:
    """Return once everything written to ``files`` (each flushed by the caller) is on disk: one ``syncfs`` per file
    system they are on (Linux; a writeback error on it raises OSError, as ``fsync`` would), else ``fsync`` of each.

    A batch of small files flushed this way costs one journal commit instead of one per file (measured in
    docs/safety.md); it also flushes whatever else is dirty on that file system, which a restore waits for.
    """
    files = list(files)
    if _SYNCFS is None:
        for file in files:
            os.fsync(file.fileno())
        return
    for fd in {os.fstat(file.fileno()).st_dev: file.fileno() for file in files}.values():
        if _SYNCFS(fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))
