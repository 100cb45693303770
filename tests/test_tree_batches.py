"""A tree restore of many small files in batches (`store/bulk/batch_restore.py`), on the real node: byte-exact, a
damaged block fails only its file(s), and a restore killed mid-batch leaves no half-written file under a final name.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from casstor_ops.errors import EXIT_CORRUPT
from casstor_ops.store.api import Store
from casstor_ops.store.blocks import block_list
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.trees.temporary import owner_of

from bench.common import ClientRequests

from .faults import BackgroundJob, wait_until
from .support import CASSTOR, flip_block, run_casstor, write_tree


def _small_tree(root: Path, count: int, seed: int) -> dict[str, bytes]:
    """``count`` small files (0 to 40 KB, a few the same content) in nested directories, one 2 MB file (restored
    alone, not batched), and a varied mode each."""
    rng = random.Random(seed)
    files = {f"d{i % 7}/s{i % 3}/f{i:04d}.bin": rng.randbytes(rng.choice([0, 100, 5_000, 24_000, 40_000]))
             for i in range(count)}
    files["d0/same-a"] = files["d0/same-b"] = rng.randbytes(18_000)  # per seed: a test damages its block
    files["big.bin"] = rng.randbytes(2_000_000)
    write_tree(root, files)
    for i, name in enumerate(sorted(files)):
        os.chmod(root / name, 0o600 + (i % 3) * 0o40)
    return files


def _finals(dest: Path) -> dict[str, bytes]:
    """Every file below ``dest`` under a final name (no temporary file), by relative path."""
    return {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file() and not owner_of(p.name)}


def test_a_tree_of_small_files_is_restored_in_batches_byte_exact(cql, tmp_path: Path) -> None:
    """Stores 300 small files and one large one, restores the prefix (batches of small files, the large one alone);
    checks at most half a request a file (each has one block, carried by its entry: no block list is read; restored
    alone, each takes two), every file byte for byte with its mode
    and mtime, every row restored, and no temporary file left."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    files = _small_tree(src, 300, seed=11)
    assert run_casstor("store", str(src), "batches1", "--quiet").returncode == 0
    requests = ClientRequests(cql)
    before = requests()
    proc = run_casstor("restore", "batches1/", str(dest), "--json")
    sent = requests() - before - 1
    report = json.loads(proc.stdout)
    # A few block reads a batch, the command's start and listing included: a one-block file's entry names its
    # block (casstor_ops.store.blocks.block_list); with its list read it was ~1.5 a file. Alone, a file takes two.
    assert sent <= 0.5 * len(files), sent
    assert proc.returncode == 0 and {r["status"] for r in report["files"]} == {"restored"}, proc.stderr
    assert len(report["files"]) == len(files) and sum(r["bytes"] for r in report["files"]) == sum(map(len, files.values()))
    assert _finals(dest) == files
    assert not [p for p in dest.rglob("*") if owner_of(p.name)]
    for name in files:
        assert (dest / name).stat().st_mode & 0o777 == (src / name).stat().st_mode & 0o777, name
        assert (dest / name).stat().st_mtime_ns == (src / name).stat().st_mtime_ns, name


def test_a_damaged_block_fails_only_its_files_in_a_batch(cql, tmp_path: Path) -> None:
    """Injects: the content row of one block overwritten (a bit flipped) in Cassandra; the block is shared by two
    files of the same batch, and a third file's block is deleted outright. Checks: exit 3, one `corrupt` line per
    damaged file and nothing under their final names (no temporary file either), every other file of their batches
    restored byte-exact."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    files = _small_tree(src, 120, seed=12)
    assert run_casstor("store", str(src), "batches2", "--quiet").returncode == 0
    st = Statements.for_session(cql)

    def first_block(name: str) -> bytes:
        return block_list.read(cql, st, Store(cql).stat(f"batches2/{name}"))[0][1]

    flip_block(cql, first_block("d0/same-a"))  # d0/same-b has the same block
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (first_block("d3/s0/f0045.bin"),))
    damaged = {"d0/same-a", "d0/same-b", "d3/s0/f0045.bin"}
    proc = run_casstor("restore", "batches2/", str(dest))
    lines = sorted(proc.stderr.decode().splitlines())
    assert proc.returncode == EXIT_CORRUPT, proc.stderr
    assert len(lines) == len(damaged) and all(line.startswith(f"casstor: corrupt: batches2/{name}: ")
                                              for line, name in zip(lines, sorted(damaged))), lines
    assert _finals(dest) == {name: data for name, data in files.items() if name not in damaged}
    assert not [p for p in dest.rglob("*") if owner_of(p.name)]


def test_a_tree_restore_killed_mid_batch_leaves_no_half_written_file(cql, tmp_path: Path) -> None:
    """Injects: SIGKILL of `casstor restore PREFIX/ DIR` (a real subprocess, its process group) once some files of
    a tree of 1,500 small ones are in place and not all. Checks: every file under a final name is whole and
    byte-exact (the rest are absent or temporary files); the next restore with --force restores the whole tree."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    files = _small_tree(src, 1500, seed=13)
    assert run_casstor("store", str(src), "batches3", "--quiet").returncode == 0
    job = BackgroundJob([*CASSTOR, "restore", "batches3/", str(dest), "--quiet"], tmp_path / "restore.log")
    some = lambda: 0 < sum(1 for p in dest.rglob("*.bin") if not owner_of(p.name)) < len(files) // 3  # noqa: E731
    wait_until(lambda: not job.running() or (dest.exists() and some()), 300, "some files restored", poll_s=0.01)
    assert job.running(), f"the restore ended before it could be killed: {job.output()}"
    job.kill()
    found = _finals(dest)
    assert 0 < len(found) < len(files)
    assert {name: data for name, data in found.items() if files.get(name) != data} == {}
    again = run_casstor("restore", "batches3/", str(dest), "--force", "--quiet")
    assert again.returncode == 0, again.stderr
    assert _finals(dest) == files
