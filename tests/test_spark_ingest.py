"""Bulk ingest and restore through Spark executors, on the real test node (local[2])."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from casstor_ops.spark.bulk_report import exit_code, totals
from casstor_ops.cluster.connection import endpoint_from_env
from casstor_ops.errors import EXIT_PARTIAL, CasstorError
from casstor_ops.spark.executor_store import store_for
from casstor_ops.spark.bulk_ingest import ingest
from casstor_ops.spark.bulk_restore import restore_many
from casstor_ops.store.api import Store

# Relative path -> size: empty files, one byte, sub-chunk, a few chunks, many chunks (> 5 x chunk_max).
TREE = {
    "empty.txt": 0,
    "one.txt": 1,
    "docs/readme.md": 3_000,
    "docs/empty-too.txt": 0,
    "data/medium.bin": 200_000,
    "data/deep/big.bin": 1_600_000,
    "data/deep/copy-of-medium.bin": None,  # same bytes as data/medium.bin
}


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    rng = random.Random(7)
    for rel, size in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if size is not None:
            path.write_bytes(rng.randbytes(size))
    shutil.copyfile(root / "data/medium.bin", root / "data/deep/copy-of-medium.bin")
    return root


@pytest.fixture()
def store(empty_store):
    return Store(empty_store)


def rows_by_id(df) -> dict[str, dict]:
    return {r.id: r.asDict() for r in df.collect()}


def test_ingest_restore_and_resume(spark, store: Store, tree: Path, tmp_path: Path) -> None:
    seen = []
    results = ingest(spark, tree, prefix="t/", parallelism=3, progress=seen.append)
    rows = rows_by_id(results)
    assert set(rows) == {f"t/{rel}" for rel in TREE}
    assert {r["status"] for r in rows.values()} == {"stored"}, rows
    for rel in TREE:
        assert rows[f"t/{rel}"]["bytes"] == (tree / rel).stat().st_size
    assert rows["t/data/deep/big.bin"]["blocks"] >= 6
    assert rows["t/empty.txt"]["blocks"] == 0
    assert exit_code(results) == 0
    assert seen[-1].files_done == len(TREE) and seen[-1].bytes_done == seen[-1].bytes_total
    stats_before = store.stats()
    assert stats_before.files == len(TREE)
    assert stats_before.unique_bytes < stats_before.logical_bytes  # the copy deduplicated

    dest = tmp_path / "restored"
    restored = rows_by_id(restore_many(spark, "t/", dest))
    assert {r["status"] for r in restored.values()} == {"restored"}, restored
    for rel in TREE:
        assert (dest / "t" / rel).read_bytes() == (tree / rel).read_bytes(), rel

    again = rows_by_id(ingest(spark, tree, prefix="t/"))
    assert {r["status"] for r in again.values()} == {"skipped"}
    assert sum(r["new_blocks"] for r in again.values()) == 0
    assert store.stats() == stats_before

    (tree / "docs/readme.md").write_bytes(b"changed, same directory")
    changed = rows_by_id(ingest(spark, tree, prefix="t/"))
    assert changed["t/docs/readme.md"]["status"] == "stored"
    assert [r["status"] for i, r in changed.items() if i != "t/docs/readme.md"] == ["skipped"] * (len(TREE) - 1)


def test_missing_and_oversized_files_fail_alone(spark, store: Store, tree: Path) -> None:
    paths = [tree / rel for rel in TREE] + [tree / "vanished.bin"]
    results = ingest(spark, paths, prefix="m/", max_file_bytes=1_000_000)
    rows = rows_by_id(results)
    assert rows["m/vanished.bin"]["status"] == "failed"
    assert "no such file" in rows["m/vanished.bin"]["error"]
    assert rows["m/data/deep/big.bin"]["status"] == "failed"
    assert "larger than the limit" in rows["m/data/deep/big.bin"]["error"]
    ok = {i for i, r in rows.items() if r["status"] == "stored"}
    assert ok == {f"m/{rel}" for rel in TREE} - {"m/data/deep/big.bin"}
    assert exit_code(results) == EXIT_PARTIAL
    assert totals(results)["failed"] == 2
    assert {info.id for info in store.list("m/")} == ok


def test_restore_refuses_to_overwrite_unless_forced(spark, store: Store, tree: Path, tmp_path: Path) -> None:
    ingest(spark, tree / "docs", prefix="r/")
    dest = tmp_path / "out"
    assert exit_code(restore_many(spark, "r/", dest)) == 0
    (dest / "r/readme.md").write_bytes(b"local edit")
    second = rows_by_id(restore_many(spark, ["r/readme.md", "r/unknown"], dest))
    assert second["r/readme.md"]["status"] == "failed" and second["r/unknown"]["status"] == "failed"
    assert (dest / "r/readme.md").read_bytes() == b"local edit"
    forced = restore_many(spark, "r/", dest, force=True)
    assert exit_code(forced) == 0
    assert (dest / "r/readme.md").read_bytes() == (tree / "docs/readme.md").read_bytes()


def test_bad_sources_are_one_line_errors(spark, store: Store, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for source, message in [(tmp_path / "nope", "no such file or directory"),
                            (tmp_path / "empty", "holds no regular files"),
                            (str(tmp_path / "*.none"), "matches no regular files")]:
        with pytest.raises(CasstorError, match=message) as err:
            ingest(spark, source)
        assert "\n" not in str(err.value)
    with pytest.raises(CasstorError, match="no file in the store"):
        restore_many(spark, "no-such-prefix/", tmp_path / "dest")


def test_one_store_per_python_worker(spark, store: Store) -> None:
    endpoint = endpoint_from_env()
    assert store_for(endpoint) is store_for(endpoint)

    def report(_):
        yield os.getpid(), id(store_for(endpoint))

    pairs = spark.sparkContext.parallelize(range(8), 8).mapPartitions(report).collect()
    stores_per_pid: dict[int, set[int]] = {}
    for pid, store_id in pairs:
        stores_per_pid.setdefault(pid, set()).add(store_id)
    assert all(len(ids) == 1 for ids in stores_per_pid.values()), stores_per_pid
    # Workers are reused across tasks (Spark may fork a spare one), so tasks share sessions.
    assert len(stores_per_pid) < len(pairs), stores_per_pid
