"""The Spark jobs on a store with inline files (content in the head row, no block list): verify checks their
content and reports damage as corruption, reclaim neither misses nor frees anything of theirs, and the dedup
report counts their content once per file, exclusive to it, as ``casstor stats`` does."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from casstor_ops.errors import EXIT_CORRUPT, CorruptionError
from casstor_ops.ops.dedup_blocks import ROOT_PREFIX
from casstor_ops.ops.dedup_growth import bin_width_ms
from casstor_ops.ops.dedup_output import format_table, render
from casstor_ops.ops.dedup_stats import compute
from casstor_ops.ops.reclaim import reclaim
from casstor_ops.ops.verify import INDEX, _Checks, verify
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements

from .support import INLINE_MAX, block_lists, flip_inline, head_rows, put, restored
from .test_dedup_stats import _ms, _prefix, brute_force

KiB = 1024
TEXT = b"a small file kept in its head row compresses like a block " * 100  # ~5.8 KiB: inline, zstd


def inline_heads(cql) -> dict[str, tuple[int, int]]:
    """``{id: (size, stored_size)}`` of the inline heads, read with the driver."""
    return {r.id: (r.size, r.stored_size) for r in head_rows(cql, "id, size, blocks, stored_size")
            if r.stored_size is not None}


def garbage(cql) -> set[bytes]:
    """Index rows no head's block list names, read with the driver (independently of references.py)."""
    lists = block_lists(cql)
    named = {digest for head in head_rows(cql) for digest, _ in lists.get((head.id, head.version), [])}
    return {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")} - named


@pytest.fixture()
def short_bound(inline_store):
    """A commit bound of 1 s (block lists go stale after 2 s, an online reclaim waits 6 s); restored after."""
    set_commit_bound(inline_store, 1)
    yield inline_store
    set_commit_bound(inline_store, SAFETY.commit_bound_s)


def test_verify_reports_damaged_inline_content_and_repairs_nothing(inline_store, spark) -> None:
    """Injects, beside intact inline and block files: a bit flipped in a raw inline content (no longer its file
    hash), in a zstd one (no longer decodes), and an inline head whose content is deleted. Checks that verify with
    ``--repair-index`` counts exactly those three as ``corrupt_inline_files`` (examples: their IDs), no block list
    as broken, exits EXIT_CORRUPT and leaves them damaged (restore still refuses); and that the confirmation
    re-read drops a damaged version forgotten since the scan (overwritten, it is still kept, still damaged)."""
    cql, store = inline_store, Store(inline_store)
    rng = random.Random(4)
    files = {"ok/raw": rng.randbytes(3000), "ok/text": TEXT, "ok/one-byte": b"x", "ok/blocks": rng.randbytes(200 * KiB),
             "bad/raw": rng.randbytes(INLINE_MAX), "bad/zstd": TEXT + b"!", "bad/absent": rng.randbytes(100)}
    for file_id, data in files.items():
        put(store, file_id, data)
    heads = {file_id: store.stat(file_id) for file_id in files}
    assert all(heads[f].is_inline for f in files if f != "ok/blocks") and not heads["ok/blocks"].is_inline
    assert heads["bad/zstd"].inline.codec == "zstd" and heads["bad/raw"].inline.codec is None
    flip_inline(cql, "bad/raw")
    flip_inline(cql, "bad/zstd")
    cql.execute(cql.prepare(f"UPDATE {META_KS}.versions SET content = null WHERE id = ? AND version = ?"),
                ("bad/absent", heads["bad/absent"].version))

    report = verify(spark, repair_index=True)
    assert report.problems == {**{kind: 0 for kind in report.problems}, "corrupt_inline_files": 3}
    assert sorted(e.split("@")[0] for e in report.examples["corrupt_inline_files"]) == ["bad/absent", "bad/raw",
                                                                                          "bad/zstd"]
    assert report.repaired == {kind: 0 for kind in INDEX} and report.exit_code == EXIT_CORRUPT
    assert "corrupt_inline_files" in report.table() and "CORRUPTION" in report.table()
    assert report.blocks_checked == len(list(cql.execute(
        Statements.for_session(cql).file_blocks, ("ok/blocks", heads["ok/blocks"].version))))
    for file_id in ("bad/raw", "bad/zstd", "bad/absent"):
        with pytest.raises(CorruptionError):
            restored(store, file_id)
    for file_id in ("ok/raw", "ok/text", "ok/one-byte", "ok/blocks"):
        assert restored(store, file_id) == files[file_id]

    # The executors' re-read: the damaged version still differs, overwritten too (it is kept until forget); once
    # its row is dropped (what forget does), it does not.
    checks = _Checks(cql)
    scanned = SimpleNamespace(kind="corrupt_inline_files", id="bad/raw", version=str(heads["bad/raw"].version))
    assert checks.still_differs(scanned)
    put(store, "bad/raw", b"stored again")
    assert checks.still_differs(scanned)
    cql.execute(cql.prepare(f"DELETE FROM {META_KS}.versions WHERE id = ? AND version = ?"),
                ("bad/raw", heads["bad/raw"].version))
    assert not checks.still_differs(scanned)


def test_reclaim_keeps_every_inline_and_block_file(short_bound, spark) -> None:
    """Injects, in a store of inline and block files: block files overwritten by block files and by inline
    content, an inline file overwritten by a block file, an inline file overwritten inline, block and inline
    files removed; an offline reclaim, then more such garbage and an online reclaim. Checks that each plan calls
    nothing missing, deletes exactly the unreferenced index rows and the stale block lists (none of an inline
    head), and that afterwards every file restores byte-exact and verify is clean."""
    cql, store = short_bound, Store(short_bound)
    rng = random.Random(7)
    shared = rng.randbytes(200 * KiB)
    files = {"blk/a": shared + rng.randbytes(100 * KiB), "blk/b": shared + rng.randbytes(80 * KiB),
             "blk/c": rng.randbytes(150 * KiB), "blk/gone": rng.randbytes(120 * KiB),
             "in/a": rng.randbytes(5000), "in/b": TEXT, "in/c": rng.randbytes(INLINE_MAX), "in/gone": b"bye"}
    for file_id, data in files.items():
        put(store, file_id, data)
    for file_id, data in {"blk/a": rng.randbytes(90 * KiB),      # blocks -> blocks
                          "blk/b": rng.randbytes(900),          # blocks -> inline: its list goes stale
                          "in/a": rng.randbytes(60 * KiB),      # inline -> blocks
                          "in/b": TEXT[::-1]}.items():          # inline -> inline: nothing for reclaim
        files[file_id] = data
        put(store, file_id, data)
    for file_id in ("blk/gone", "in/gone"):
        store.remove(file_id)
        del files[file_id]
    doomed = garbage(cql)
    assert doomed and inline_heads(cql).keys() == {"blk/b", "in/b", "in/c"}
    time.sleep(2.5)  # the replaced and removed block lists are older than 2 x the bound now

    offline = reclaim(spark, cql, log=lambda msg: None)
    assert offline.exit_code == 0 and offline.plan.missing.blocks == 0 and offline.plan.repairable.blocks == 0
    assert offline.stats.deleted.blocks == len(doomed) and not garbage(cql)
    # Forget, which reclaim runs first, dropped blk/a's and blk/b's first versions and blk/gone's with their lists
    # (none inline): none is left for the plan.
    assert offline.stats.deleted_lists == 0

    for file_id, data in {"blk/c": b"now inline", "in/c": rng.randbytes(40 * KiB)}.items():
        files[file_id] = data
        put(store, file_id, data)
    time.sleep(2.5)  # the overwritten versions are past forget's grace (2 x the bound): reclaim forgets them
    doomed = garbage(cql)
    online = reclaim(spark, cql, online=True, log=lambda msg: None)
    assert online.exit_code == 0 and online.plan.missing.blocks == 0
    assert online.stats.deleted.blocks == len(doomed) and not garbage(cql)

    for file_id, data in files.items():
        assert restored(store, file_id) == data, file_id
    clean = verify(spark)
    assert clean.exit_code == 0 and not any(clean.problems.values()), clean.table()


def expected_with_inline(cql, depth: int) -> dict:
    """:func:`tests.test_dedup_stats.brute_force`'s figures, with each inline head's content added as the rule
    says: unique and exclusive bytes of its prefix, growth at its commit, new bytes of its top-level prefix."""
    expected = brute_force(cql, depth)
    heads = {r.id: r for r in head_rows(cql, "id, size, stored_size, committed_at")}
    times = [_ms(h.committed_at) for h in heads.values()]
    width = bin_width_ms(min(times), max(times))
    new = {p: Counter({"new_blocks": c["new_blocks"], "new_bytes": c["new_bytes"],
                       "new_stored_bytes": c["new_stored_bytes"]}) for p, c in expected["new_by_prefix"].items()}
    for file_id, head in heads.items():
        if head.stored_size is None:
            continue
        row = expected["prefixes"][_prefix(file_id, depth)]
        for column, value in (("unique_bytes", head.size), ("exclusive_bytes", head.size),
                              ("exclusive_stored_bytes", head.stored_size)):
            row[column] += value
        for step in expected["growth"]:
            if step["bin_start"] >= _ms(head.committed_at) // width * width:
                step["unique_bytes"] += head.size
                step["stored_bytes"] += head.stored_size
        new.setdefault(_prefix(file_id, 1), Counter(new_blocks=0)).update(new_bytes=head.size,
                                                                           new_stored_bytes=head.stored_size)
    expected["new_by_prefix"] = new
    return expected


def test_dedup_report_counts_inline_content_once_per_file(inline_store, spark) -> None:
    """Injects a store of inline files (one content under two IDs, compressible and random ones), block files
    sharing blocks across prefixes, a mixed prefix, and overwrites both ways (inline <-> blocks). Checks the
    totals against ``casstor stats``, and the prefixes, sharing classes and growth against a brute-force count
    in Python with the rule: an inline file's content is its own (unique and exclusive bytes, never shared, no
    block)."""
    cql, store = inline_store, Store(inline_store)
    rng = random.Random(21)
    shared, twin = rng.randbytes(150 * KiB), rng.randbytes(2000)
    for file_id, data in [("small/t1", twin), ("small/text", TEXT), ("copy/t1", twin), ("tiny", b"1"),
                          ("big/a", shared + rng.randbytes(100 * KiB)), ("big/b", shared),
                          ("mix/a", shared + rng.randbytes(60 * KiB)), ("mix/b", rng.randbytes(700)),
                          ("mix/c", rng.randbytes(50 * KiB)), ("mix/c", TEXT[:3000]),    # blocks -> inline
                          ("small/was", rng.randbytes(900)), ("small/was", rng.randbytes(70 * KiB))]:
        put(store, file_id, data)

    report = compute(spark, depth=1)
    t, core = report.totals, store.stats().as_dict()
    assert {k: t[k] for k in core} == core
    inline = inline_heads(cql)
    assert len(inline) == 6 and t["unique_bytes"] > sum(size for size, _ in inline.values()) > 0
    expected = expected_with_inline(cql, depth=1)

    prefixes = {r.pop("prefix"): r for r in report.tables["prefixes"].to_dict("records")}
    assert {p: {k: v for k, v in r.items() if k != "dedup_ratio"} for p, r in prefixes.items()} == \
        expected["prefixes"]
    # The twin content is exclusive to each of its two prefixes; a prefix of inline files only has no block.
    assert prefixes["copy"]["exclusive_bytes"] == prefixes["copy"]["unique_bytes"] == 2000
    assert prefixes["copy"]["unique_blocks"] == prefixes["copy"]["shared_bytes"] == 0
    assert prefixes[ROOT_PREFIX]["dedup_ratio"] == 1.0 and prefixes["mix"]["shared_bytes"] > 0
    sharing = report.tables["sharing"]
    assert {k: {c: row[c] for c in expected["classes"][k]} for k, row in enumerate(sharing.to_dict("records"))
            if row["blocks"]} == expected["classes"]
    assert sharing.bytes.sum() == t["referenced_bytes"]  # blocks only
    assert sharing.saved_bytes.sum() == t["logical_bytes"] - t["referenced_bytes"] - sum(s for s, _ in inline.values())

    growth = report.tables["growth"]
    assert [{**row, "bin_start": _ms(row["bin_start"])} for row in growth.drop(columns="bin_end").to_dict("records")] \
        == expected["growth"]
    assert growth.iloc[-1].unique_bytes == t["referenced_bytes"] + sum(size for size, _ in inline.values())
    by_prefix = report.tables["new_bytes_by_prefix"].set_index("prefix")
    assert {p: dict(row) for p, row in by_prefix[["new_blocks", "new_bytes", "new_stored_bytes"]].iterrows()} == \
        {p: dict(c) for p, c in expected["new_by_prefix"].items()}


def test_dedup_report_and_verify_of_a_store_of_inline_files_only(inline_store, spark, tmp_path: Path) -> None:
    """Injects a store whose every file is inline (two with the same content). Checks that the report has every
    block figure 0, unique bytes = logical bytes (ratio 1.0, no division by zero blocks), its totals equal to
    ``casstor stats``, empty block tables, and that it prints and renders; and that verify is clean with no
    block checked."""
    store = Store(inline_store)
    rng = random.Random(3)
    twin = rng.randbytes(1000)
    for file_id, data in [("a/1", twin), ("b/1", twin), ("b/2", TEXT), ("c", rng.randbytes(INLINE_MAX))]:
        put(store, file_id, data)

    report = compute(spark)
    t = report.totals
    assert {k: t[k] for k in store.stats().as_dict()} == store.stats().as_dict()
    assert t["logical_bytes"] == t["unique_bytes"] == 2000 + len(TEXT) + INLINE_MAX and t["dedup_ratio"] == 1.0
    assert t["stored_bytes"] < t["unique_bytes"]  # TEXT is kept compressed
    assert all(t[k] == 0 for k in ("unique_blocks", "referenced_blocks", "referenced_bytes", "block_references",
                                   "garbage_blocks", "missing_blocks", "non_head_block_lists"))
    tables = report.tables
    assert tables["sharing"].empty and tables["most_shared_blocks"].empty and tables["block_sizes"].blocks.sum() == 0
    assert tables["growth"].iloc[-1][["files", "unique_blocks", "unique_bytes", "stored_bytes"]].tolist() == \
        [4, 0, t["unique_bytes"], t["stored_bytes"]]
    assert set(tables["prefixes"].exclusive_bytes) == {1000, 1000 + len(TEXT), INLINE_MAX}
    assert "casstor dedup report" in format_table(report)
    assert any(path.suffix == ".html" for path in render(report, tmp_path / "report"))

    clean = verify(spark)
    assert clean.exit_code == 0 and not any(clean.problems.values()) and clean.blocks_checked == 0
