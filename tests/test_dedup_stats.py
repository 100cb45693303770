"""The dedup report: 64-bit totals past 2^31, agreement with the index, with ``casstor stats`` and with a
brute-force count in Python (exclusive and shared bytes per prefix, reference classes, growth), the job."""

from __future__ import annotations

import calendar
import io
import json
import os
import random
from collections import Counter, defaultdict
from pathlib import Path

from cassandra.concurrent import execute_concurrent_with_args

from casstor_ops.ops.dedup_blocks import ROOT_PREFIX, prefix_of
from casstor_ops.ops.dedup_growth import bin_width_ms
from casstor_ops.ops.dedup_output import format_table, render
from casstor_ops.ops.dedup_stats import compute
from casstor_ops.store.api import Store
from casstor_ops.store.cql.statements import Statements

from .support import block_lists, casstor_job, head_rows, write_head

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
    for file_id in new_ids:
        write_head(session, file_id, head.version, head.size, head.hash, head.blocks)


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

    block_sizes, most_shared = report.tables["block_sizes"], report.tables["most_shared_blocks"]
    assert block_sizes.blocks.sum() == t["unique_blocks"] and block_sizes["bytes"].sum() == t["unique_bytes"]
    assert most_shared.iloc[0].refs == 32 * (COPIES + 1)
    assert most_shared.iloc[0]["size"] == 256 * 1024 and len(most_shared) == 3
    assert list(report.tables["largest_files"].id[:2]) == ["copies/000/zeros", "copies/001/zeros"]
    prefixes = report.tables["prefixes"].set_index("prefix")
    assert list(prefixes.index) == ["orig", "copies"]  # by bytes freed: the zeros block is shared by both
    assert prefixes.loc["copies"].files == COPIES and prefixes.loc["copies"].unique_bytes == 256 * 1024
    assert prefixes.loc["copies"].logical_bytes == ZERO_FILE * COPIES > 2**31
    assert prefixes.loc["copies"].shared_bytes == 256 * 1024 and prefixes.loc["copies"].exclusive_bytes == 0
    assert prefixes.loc["orig"].logical_bytes == ZERO_FILE + 1_500_000
    assert prefixes.loc["orig"].exclusive_bytes == 1_500_000
    sharing = report.tables["sharing"].set_index("refs_class")
    assert sharing.loc["8193-16384"].blocks == 1 and sharing.loc["8193-16384"].references == 32 * (COPIES + 1)
    assert sharing.saved_bytes.sum() == logical - t["referenced_bytes"] > 2**31
    assert report.tables["growth"].iloc[-1].logical_bytes == logical

    written = render(report, tmp_path / "out")
    assert {p.name for p in written} >= {"dedup_stats.json", "dedup_totals.csv", "prefixes.csv", "sharing.csv",
                                         "growth.csv", "block_sizes.png", "prefixes.png", "sharing.png",
                                         "growth.png", "new_bytes_by_prefix.png", "largest_files.png",
                                         "dedup_report.html"}
    assert all(p.stat().st_size > 0 for p in written)
    assert json.loads((tmp_path / "out" / "dedup_stats.json").read_text())["totals"]["logical_bytes"] == logical
    assert f"({logical} B)" in format_table(report)


def _ms(when) -> int:
    return calendar.timegm(when.utctimetuple()) * 1000 + when.microsecond // 1000


def _prefix(file_id: str, depth: int) -> str:
    return "/".join(file_id.split("/")[:-1][:depth]) or ROOT_PREFIX


def brute_force(session, depth: int, heads_only: bool = True) -> dict:
    """The report's per-prefix, per-class and growth figures, counted in Python from every row of the tables.

    ``heads_only=False`` counts every block list, superseded ones too: what the report must NOT do.
    """
    heads = {r.id: r for r in head_rows(session, "id, version, size, committed_at")}
    lists = defaultdict(list)
    for (file_id, version), rows in block_lists(session).items():
        if file_id in heads and (heads[file_id].version == version or not heads_only):
            lists[file_id] += rows
    stored = {r.hash: r.size if r.stored_size is None else r.stored_size
              for r in session.execute("SELECT hash, size, stored_size FROM casstor_data.existing_blocks")}
    owners, size, refs, first = defaultdict(set), {}, Counter(), {}
    for file_id, blocks in lists.items():
        for digest, block_size in blocks:
            owners[digest].add(_prefix(file_id, depth))
            size[digest], refs[digest] = block_size, refs[digest] + 1
            first[digest] = min(first.get(digest, (2**63, "")), (_ms(heads[file_id].committed_at), file_id))

    prefixes = {}
    for file_id, head in heads.items():
        row = prefixes.setdefault(_prefix(file_id, depth), {"files": 0, "logical_bytes": 0, "blocks": set()})
        row["files"] += 1
        row["logical_bytes"] += head.size
        row["blocks"] |= {digest for digest, _ in lists[file_id]}
    for name, row in prefixes.items():
        unique = row.pop("blocks")
        exclusive = {d for d in unique if owners[d] == {name}}
        row.update(unique_blocks=len(unique), unique_bytes=sum(size[d] for d in unique),
                   exclusive_blocks=len(exclusive), exclusive_bytes=sum(size[d] for d in exclusive),
                   exclusive_stored_bytes=sum(stored.get(d, 0) for d in exclusive))
        row["shared_bytes"] = row["unique_bytes"] - row["exclusive_bytes"]

    classes = {}
    for digest, count in refs.items():
        row = classes.setdefault(0 if count == 1 else (count - 1).bit_length(), Counter())
        row.update(blocks=1, bytes=size[digest], stored_bytes=stored.get(digest, 0), references=count,
                   saved_bytes=(count - 1) * size[digest])

    times = [_ms(h.committed_at) for h in heads.values()]
    width = bin_width_ms(min(times), max(times))
    growth = defaultdict(Counter)
    for file_id, head in heads.items():
        growth[_ms(head.committed_at) // width].update(files=1, logical_bytes=head.size)
    new_by_prefix = defaultdict(Counter)
    for digest, (when, file_id) in first.items():
        growth[when // width].update(unique_blocks=1, unique_bytes=size[digest], stored_bytes=stored.get(digest, 0))
        new_by_prefix[_prefix(file_id, 1)].update(new_blocks=1, new_bytes=size[digest],
                                                  new_stored_bytes=stored.get(digest, 0))
    cumulative, total = [], Counter()
    for index in sorted(growth):
        total.update(growth[index])
        cumulative.append({"bin_start": index * width, **{k: total[k] for k in (
            "files", "logical_bytes", "unique_blocks", "unique_bytes", "stored_bytes")}})
    return {"prefixes": prefixes, "classes": classes, "growth": cumulative, "new_by_prefix": new_by_prefix}


def _segment(rng: random.Random, kib: int) -> bytes:
    return rng.randbytes(kib * 1024)


def test_exclusive_shared_classes_and_growth_match_a_brute_force_count(empty_store, spark) -> None:
    rng = random.Random(15)
    r1, r2, r3, r4, r5, r6 = (_segment(rng, 300) for _ in range(6))
    text = b"every owner asks what deleting this would free " * 8000  # compressible: stored < unique
    store = Store(empty_store)
    for data, file_id in [
            (r1 + r2, "alpha/x/a1"), (r2 + r3, "alpha/x/a2"),    # share r2 inside alpha/x
            (r3 + text, "alpha/y/b1"),                           # shares r3 with alpha/x: shared at depth 2
            (r4, "beta/c1"), (r1, "beta/deep/d/e/f"),            # r1 shared across top-level prefixes
            (r6, "gamma/g"), (text + r5, "gamma/h"),
            (r4 + r5, "beta/c1"),                                # overwrite: its first version must not count
            (r2 + r6[:100_000], "alpha/x/a1"),                   # overwrite: r1 now only under beta
            (bytes(1 << 20), "beta/zeros"),                      # one file naming one block 4 times
            (b"top-level file", "README")]:
        store.put(io.BytesIO(data), file_id)
    store.remove("gamma/g")                                      # its blocks are garbage now

    expected = brute_force(empty_store, depth=2)
    report = compute(spark, depth=2)

    prefixes = {r.pop("prefix"): r for r in report.tables["prefixes"].to_dict("records")}
    assert {name: {k: v for k, v in row.items() if k != "dedup_ratio"} for name, row in prefixes.items()} == \
        expected["prefixes"]
    assert list(prefixes) == sorted(prefixes, key=lambda p: (-prefixes[p]["exclusive_stored_bytes"],
                                                            -prefixes[p]["logical_bytes"], p))
    # The store has what the test is about: several prefixes, blocks both exclusive and shared, compression,
    # and superseded block lists that would change the figures if they were counted.
    assert len(prefixes) >= 5 and ROOT_PREFIX in prefixes
    assert any(r["exclusive_bytes"] and r["shared_bytes"] for r in prefixes.values())
    assert any(r["exclusive_stored_bytes"] < r["exclusive_bytes"] for r in prefixes.values())
    assert brute_force(empty_store, depth=2, heads_only=False)["prefixes"] != expected["prefixes"]
    assert report.totals["garbage_blocks"] > 0 and report.totals["non_head_block_lists"] == 3

    sharing = report.tables["sharing"]
    assert {k: {c: row[c] for c in expected["classes"][k]} for k, row in enumerate(sharing.to_dict("records"))
            if row["blocks"]} == expected["classes"]
    assert set(expected["classes"]) >= {0, 1, 2}  # 1, 2 and 3-4 references
    assert sharing.saved_bytes.sum() == report.totals["logical_bytes"] - report.totals["referenced_bytes"]

    growth = report.tables["growth"]
    assert [{**row, "bin_start": _ms(row["bin_start"])} for row in growth.drop(columns="bin_end").to_dict("records")] \
        == expected["growth"]
    last = growth.iloc[-1]
    assert (last.files, last.logical_bytes, last.unique_bytes) == (
        report.totals["files"], report.totals["logical_bytes"], report.totals["referenced_bytes"])
    by_prefix = report.tables["new_bytes_by_prefix"].set_index("prefix")
    assert {p: dict(row) for p, row in by_prefix[["new_blocks", "new_bytes", "new_stored_bytes"]].iterrows()
            if row.new_blocks} == {p: dict(c) for p, c in expected["new_by_prefix"].items()}
    over_time = report.tables["new_bytes_over_time"]
    assert over_time.groupby("prefix").new_bytes.max().to_dict() == \
        {p: c["new_bytes"] for p, c in expected["new_by_prefix"].items()}


def test_prefix_of_depth(spark) -> None:
    ids = spark.createDataFrame([("a/b/c.txt",), ("a/x",), ("top",), ("/abs/y",)], ["id"])
    assert [r.p for r in ids.select(prefix_of(1).alias("p")).collect()] == ["a", "a", ROOT_PREFIX, ROOT_PREFIX]
    assert [r.p for r in ids.select(prefix_of(2).alias("p")).collect()] == ["a/b", "a", ROOT_PREFIX, "/abs"]


def test_casstor_report_writes_files_that_agree_with_casstor_stats(empty_store, tmp_path: Path) -> None:
    """Checks: `casstor report --out DIR --depth 2`, run as a user runs it (a subprocess with its own Spark), prints
    the summary and writes the JSON (its totals those of `casstor stats`), a CSV per table, the PNGs and the HTML.
    (`spark-submit jobs/dedup_stats.py` is the same parser and body: tests/unit/test_maintenance_flags.py.)"""
    with Store(empty_store) as store:
        for i in range(3):
            (tmp_path / f"f{i}").write_bytes(os.urandom(200_000) * 2)
            store.put(tmp_path / f"f{i}", f"job/f{i}")
        core = store.stats().as_dict()
    code, output, err = casstor_job("report", "--out", str(tmp_path / "plots"), "--depth", "2")
    assert code == 0, err[-2000:]
    assert "casstor dedup report" in output and "dedup ratio" in output and "Traceback" not in err
    assert "prefixes (depth 2)" in output and "dedup_report.html" in output
    report = json.loads((tmp_path / "plots" / "dedup_stats.json").read_text())
    assert {k: report["totals"][k] for k in core} == core and report["depth"] == 2
    assert [row["prefix"] for row in report["prefixes"]] == ["job"]
    assert all((tmp_path / "plots" / f"{name}.png").stat().st_size > 0
               for name in ("block_sizes", "prefixes", "sharing", "growth", "new_bytes_by_prefix", "largest_files"))
    assert list((tmp_path / "plots").glob("*.csv"))
    assert (tmp_path / "plots" / "dedup_report.html").read_text().count("data:image/png;base64,") == 6
