"""A restore's temporary files: names, ownership, and which strays the next restore of a DEST removes.

Real files in a temporary directory and real processes (a child that has
exited, the test's own pid); no node.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

from casstor_ops.store.trees.temporary import (STRAY_MIN_AGE_S, Owner, create_temporary, dest_tag, owner_of, pid_alive,
                                         remove_strays, temporary_name)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _stray(dest: Path, pid: int, nonce: str = "0badf00d", age_s: float = 2 * STRAY_MIN_AGE_S) -> Path:
    """A temporary file last written ``age_s`` ago (default: old enough to be a stray)."""
    path = dest.parent / temporary_name(dest, pid, nonce)
    path.write_bytes(b"partial content")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_name_carries_the_dest_tag_and_the_pid() -> None:
    dest = Path("/data/" + "x" * 255)
    name = temporary_name(dest, 4242, "9f3a61c0")
    assert len(name) <= 43 and name.startswith(".casstor-") and name.endswith(".tmp")
    assert owner_of(name) == Owner(dest_tag(dest), 4242)
    assert dest_tag(Path("/a/big.iso")) == dest_tag(Path("/b/big.iso")) != dest_tag(Path("/a/big.iso2"))


def test_other_names_have_no_owner() -> None:
    for name in (".casstor-1f0c9a7e5b3d2c41.tmp", "big.iso", ".casstor-5d1e0a77c2f4-0-9f3a61c0.tmp",
                 ".casstor-5d1e0a77c2f4-12-9f3a61c0.tmp.x", ".casstor-5D1E0A77C2F4-12-9f3a61c0.tmp"):
        assert owner_of(name) is None, name


def test_created_file_is_named_for_this_process_and_locked(tmp_path: Path) -> None:
    dest = tmp_path / "out.bin"
    path, file = create_temporary(dest)
    with file:
        assert owner_of(path.name) == Owner(dest_tag(dest), os.getpid())
        with open(path, "rb") as other:  # a second open file description: flock conflicts with ours
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                raise AssertionError("the temporary file was not locked")
            except BlockingIOError:
                pass


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(_dead_pid())
    assert pid_alive(3_000_000_000)  # beyond any pid (os.kill raises OverflowError): not this host's to judge


def test_a_name_with_a_pid_beyond_the_range_of_pids_is_kept(tmp_path: Path) -> None:
    """Injects: a stray named with pid 3000000000 (the name pattern allows 10 digits; os.kill overflows on it).
    Checks: remove_strays keeps it and raises nothing; a stray of a dead pid beside it is still removed."""
    dest = tmp_path / "out.bin"
    huge = _stray(dest, 3_000_000_000)
    dead = _stray(dest, _dead_pid())
    assert remove_strays(dest) == [dead]
    assert huge.exists()


def test_a_young_stray_is_kept_it_may_be_a_writer_between_create_and_lock(tmp_path: Path) -> None:
    """Injects: an unlocked temporary file of a pid dead here, written just now (a writer on another host of a
    shared file system, between its create and its flock). Checks: it is kept until STRAY_MIN_AGE_S old."""
    dest = tmp_path / "out.bin"
    young = _stray(dest, _dead_pid(), age_s=0)
    assert remove_strays(dest) == []
    then = time.time() - STRAY_MIN_AGE_S - 1
    os.utime(young, (then, then))
    assert remove_strays(dest) == [young]


def test_strays_of_dead_writers_of_this_dest_are_removed_and_nothing_else(tmp_path: Path) -> None:
    dest = tmp_path / "out.bin"
    dead = _dead_pid()
    stray = _stray(dest, dead)
    live_writer = _stray(dest, os.getpid())                      # a restore still running (this process)
    other_dest = _stray(tmp_path / "other.bin", dead)            # a stray of another DEST: its own restore's job
    old_format = tmp_path / ".casstor-1f0c9a7e5b3d2c41.tmp"      # says nothing of its owner
    old_format.write_bytes(b"x")
    assert remove_strays(dest) == [stray]
    assert not stray.exists()
    assert live_writer.exists() and other_dest.exists() and old_format.exists()


def test_a_locked_stray_is_kept_even_if_its_pid_is_dead_here(tmp_path: Path) -> None:
    """A writer on another host (shared file system) has a pid that means nothing here: its lock keeps its file."""
    dest = tmp_path / "out.bin"
    stray = _stray(dest, _dead_pid())
    with open(stray, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert remove_strays(dest) == []
    assert stray.exists()
    assert remove_strays(dest) == [stray]
