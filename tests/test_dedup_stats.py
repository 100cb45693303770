"""The dedup report: 64-bit totals past 2^31, agreement with the index and with ``casstor stats``, the job."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cassandra.concurrent import execute_concurrent_with_args

from casstor_ops.ops.dedup_stats import ROOT_PREFIX, compute, format_table, prefix_of, render
from casstor_ops.store.statements import Statements
from casstor_ops.store.api import Store

from .support import spark_submit

ZERO_FILE = 8 << 20   # zeros chunk at the maximum size: 32 identical 256 KiB blocks
COPIES = 260          # 261 x 8 MiB = 2.04 GiB logical, past 2^31


def copy_head(session, source_id: str, new_ids: list[str]) -> None:
    """Commit ``new_ids`` as copies of ``source_id``'s committed version (same blocks), cheaply."""
    st = Statements.for_session(session)
    head = session.execute(st.head, (source_id,)).one()
    blocks = list(session.execute(st.file_blocks, (source_id, head.version)))
    execute_concurrent_with_args(session, st.insert_file_block, [
        (file_id, head.version, b.block_offset, b.hash, b.size) for file_id in new_ids for b in blocks],
        concurrency=64, raise_on_first_error=True)
    execute_concurrent_with_args(session, st.insert_head, [
        (file_id, head.version, head.size, head.hash, head.blocks, head.committed_at) for file_id in new_ids],
        concurrency=64, raise_on_first_error=True)


def test_totals_past_2_gib_match_the_files_and_the_index(empty_store, spark, tmp_path: Path) -> None:
    store = Store(empty_store)
    (tmp_path / "zeros").write_bytes(bytes(ZERO_FILE))
    (tmp_path / "random").write_bytes(os.urandom(1_500_000))
    (tmp_path / "doomed").write_bytes(os.urandom(400_000))
    results = [store.put(tmp_path / "zeros", "orig/zeros"), store.put(tmp_path / "random", "orig/sub/random"),
               store.put(tmp_path / "doomed", "top-level-file")]
    copy_head(empty_store, "orig/zeros", [f"copies/{i:03}/zeros" for i in range(COPIES)])
    store.remove("top-level-file")  # its blocks become garbage

    report = compute(spark, top=3, largest=5)
    t = report.totals
    logical = ZERO_FILE * (COPIES + 1) + 1_500_000
    assert logical > 2**31
    assert t["files"] == COPIES + 2 and t["logical_bytes"] == logical
    assert t["unique_blocks"] == sum(r.new_blocks for r in results)
    assert t["unique_bytes"] == sum(r.new_bytes for r in results) == 256 * 1024 + 1_500_000 + 400_000
    # The zeros compress (the test store's default zstd), the random files are kept raw.
    assert t["stored_bytes"] == sum(r.new_stored_bytes for r in results) < t["unique_bytes"] - 256 * 1024 + 1024
    assert t["garbage_blocks"] == results[2].new_blocks and t["garbage_bytes"] == 400_000
    assert t["missing_blocks"] == 0
    assert t["block_references"] == 32 * (COPIES + 1) + results[1].blocks

    # Agrees with the core's driver-side totals (``casstor stats``), summed in Python.
    core = store.stats().as_dict()
    assert {k: t[k] for k in core} == core

    assert report.block_sizes.blocks.sum() == t["unique_blocks"]
    assert report.block_sizes["bytes"].sum() == t["unique_bytes"]
    assert report.most_shared_blocks.iloc[0].refs == 32 * (COPIES + 1)
    assert report.most_shared_blocks.iloc[0]["size"] == 256 * 1024 and len(report.most_shared_blocks) == 3
    assert list(report.largest_files.id[:2]) == ["copies/000/zeros", "copies/001/zeros"]
    prefixes = report.prefixes.set_index("prefix")
    assert list(prefixes.index) == ["copies", "orig"]
    assert prefixes.loc["copies"].files == COPIES and prefixes.loc["copies"].unique_bytes == 256 * 1024
    assert prefixes.loc["orig"].logical_bytes == ZERO_FILE + 1_500_000

    written = render(report, tmp_path / "out")
    assert {p.name for p in written} >= {"dedup_stats.json", "dedup_totals.csv", "prefixes.csv",
                                         "block_sizes.png", "prefixes.png", "most_shared_blocks.png",
                                         "largest_files.png"}
    assert all(p.stat().st_size > 0 for p in written)
    assert json.loads((tmp_path / "out" / "dedup_stats.json").read_text())["totals"]["logical_bytes"] == logical
    assert f"({logical} B)" in format_table(report)


def test_prefix_of_depth(spark) -> None:
    ids = spark.createDataFrame([("a/b/c.txt",), ("a/x",), ("top",), ("/abs/y",)], ["id"])
    assert [r.p for r in ids.select(prefix_of(1).alias("p")).collect()] == ["a", "a", ROOT_PREFIX, ROOT_PREFIX]
    assert [r.p for r in ids.select(prefix_of(2).alias("p")).collect()] == ["a/b", "a", ROOT_PREFIX, "/abs"]


def test_job_writes_report_that_agrees_with_casstor_stats(empty_store, tmp_path: Path) -> None:
    with Store(empty_store) as store:
        for i in range(3):
            (tmp_path / f"f{i}").write_bytes(os.urandom(200_000) * 2)
            store.put(tmp_path / f"f{i}", f"job/f{i}")
        core = store.stats().as_dict()
    code, output = spark_submit("jobs/dedup_stats.py", "--out", str(tmp_path / "plots"), "--prefix-depth", "2")
    assert code == 0, output
    assert "casstor dedup report" in output and "dedup ratio" in output and "Traceback" not in output
    totals = json.loads((tmp_path / "plots" / "dedup_stats.json").read_text())["totals"]
    assert {k: totals[k] for k in core} == core
    assert all((tmp_path / "plots" / f"{name}.png").stat().st_size > 0
               for name in ("block_sizes", "prefixes", "most_shared_blocks", "largest_files"))


def test_job_bad_argument_is_one_line(cql) -> None:
    code, output = spark_submit("jobs/dedup_stats.py", "--prefix-depth", "0")
    assert code == 1 and "Traceback" not in output
    assert [line for line in output.splitlines() if line.startswith("casstor:")] == \
        ["casstor: --prefix-depth 0: must be at least 1"]
