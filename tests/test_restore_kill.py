"""A ``casstor restore`` client killed with -9 in the middle: no DEST, and the next restore removes what it left.

On the session's test node; the restore runs as a user runs it, in a
subprocess, and is killed once its temporary file beside DEST has grown.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from casstor_ops.store.api import Store
from casstor_ops.store.trees.temporary import STRAY_MIN_AGE_S, owner_of

from .faults import BackgroundJob, sha256, wait_until
from .support import CASSTOR, run_casstor

SIZE = 64 << 20


def _temporaries(directory: Path) -> dict[Path, int]:
    sizes = {}
    for path in directory.iterdir():
        if owner_of(path.name):
            try:
                sizes[path] = path.stat().st_size
            except FileNotFoundError:  # renamed into place or removed meanwhile
                pass
    return sizes


@pytest.fixture()
def stored_big_file(cql, tmp_path: Path) -> Path:
    src = tmp_path / "big.bin"
    with open(src, "wb") as out:
        for _ in range(SIZE >> 22):
            out.write(os.urandom(4 << 20))
    Store(cql).put(src, "restore-kill/big.bin")
    return src


def test_client_killed_mid_restore_leaves_no_dest_and_the_next_run_cleans_up(stored_big_file: Path,
                                                                               tmp_path: Path) -> None:
    """Injects: SIGKILL of a `casstor restore ID DEST` of a 64 MiB file while its temporary file grows (some bytes
    written, not all). Checks: no DEST exists, the temporary file is left (the kill really was mid-restore); the
    next `casstor restore ID DEST`, once that file is STRAY_MIN_AGE_S old, succeeds byte-exact and removes it,
    leaving nothing else."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dest = out_dir / "big.bin"
    job = BackgroundJob([*CASSTOR, "restore", "restore-kill/big.bin", str(dest), "--quiet"], tmp_path / "restore.log")
    growing = lambda: any(0 < size < SIZE for size in _temporaries(out_dir).values())  # noqa: E731
    wait_until(lambda: not job.running() or growing(), 120, "the restore's temporary file to grow", poll_s=0.02)
    assert job.running(), f"the restore ended before it could be killed: {job.output()}"
    job.kill()
    assert not dest.exists()
    left = _temporaries(out_dir)
    assert len(left) == 1 and 0 < next(iter(left.values())) < SIZE, left
    then = time.time() - STRAY_MIN_AGE_S  # a young stray is kept (it may be a writer's before its lock): age it
    os.utime(next(iter(left)), (then, then))

    again = run_casstor("restore", "restore-kill/big.bin", str(dest), "--quiet")
    assert again.returncode == 0, again.stderr
    assert sha256(dest) == sha256(stored_big_file)
    assert sorted(out_dir.iterdir()) == [dest]
