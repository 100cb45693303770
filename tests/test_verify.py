"""verify: every problem kind found with exact counts, the index repaired, corruption still reported."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from casstor_ops.errors import EXIT_CORRUPT, EXIT_MAINTENANCE, MaintenanceError
from casstor_ops.ops import verify as verify_module
from casstor_ops.ops.reclaim import reclaim
from casstor_ops.ops.verify import INDEX, _Checks, verify
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.reclaim_window import WindowMode, close_window, current_window, open_window
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.history.forget import forget
from casstor_ops.store.history.policy import Policy

from .support import put, spark_submit


def block_list(session, file_id: str) -> list:
    st = Statements.for_session(session)
    head = session.execute(st.head, (file_id,)).one()
    return list(session.execute(st.file_blocks, (file_id, head.version)))


def test_finds_each_problem_and_repairs_only_the_index(empty_store, spark, tmp_path: Path) -> None:
    cql = empty_store
    store = Store(cql)
    for name in ("rot", "lost", "unindexed", "resized", "broken", "swapped", "clean"):
        (tmp_path / name).write_bytes(os.urandom(600_000))  # over 2 x chunk_max: at least 3 blocks
        store.put(tmp_path / name, f"v/{name}")
    rot, lost, unindexed, resized = (block_list(cql, f"v/{n}")[0].hash
                                     for n in ("rot", "lost", "unindexed", "resized"))
    cql.execute(cql.prepare(f"UPDATE {DATA_KS}.blocks SET content = ? WHERE hash = ?"), (b"bit rot" * 100, rot))
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (lost,))
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = ?"), (unindexed,))
    cql.execute(cql.prepare(f"UPDATE {DATA_KS}.existing_blocks SET size = ? WHERE hash = ?"), (7, resized))
    broken = cql.execute(Statements.for_session(cql).head, ("v/broken",)).one()
    cql.execute(cql.prepare(f"DELETE FROM {META_KS}.file_blocks WHERE id = ? AND version = ? AND block_offset = ?"),
                ("v/broken", broken.version, 0))
    # Two rows of a list swap their blocks: same count, same bytes; only the file hash tells.
    first, second = block_list(cql, "v/swapped")[:2]
    swap = cql.prepare(f"UPDATE {META_KS}.file_blocks SET hash = ?, size = ? WHERE id = ? AND version = ? "
                       f"AND block_offset = ?")
    swapped = cql.execute(Statements.for_session(cql).head, ("v/swapped",)).one()
    cql.execute(swap, (second.hash, second.size, "v/swapped", swapped.version, first.block_offset))
    cql.execute(swap, (first.hash, first.size, "v/swapped", swapped.version, second.block_offset))

    found = verify(spark)
    assert found.problems == {"corrupt_blocks": 1, "missing_blocks": 1, "broken_block_lists": 2,
                              "corrupt_inline_files": 0, "index_without_block": 1, "index_of_corrupt_block": 1,
                              "block_without_index": 1, "index_size_mismatch": 1}
    assert found.examples["corrupt_blocks"] == [rot.hex()] and found.examples["missing_blocks"] == [lost.hex()]
    assert found.examples["block_without_index"] == [unindexed.hex()]
    version = {n: cql.execute(Statements.for_session(cql).head, (f"v/{n}",)).one().version
               for n in ("broken", "swapped", "lost", "rot")}
    assert sorted(found.examples["broken_block_lists"]) == [f"v/broken@{version['broken']}",
                                                            f"v/swapped@{version['swapped']}"]
    assert found.damaged_files == 2
    assert found.damaged_examples == [f"v/lost@{version['lost']}", f"v/rot@{version['rot']}"]
    assert found.repaired == {} and found.exit_code == EXIT_CORRUPT
    assert "corrupt_blocks" in found.table() and "CORRUPTION" in found.table()

    repaired = verify(spark, repair_index=True)
    assert repaired.problems == found.problems
    assert repaired.repaired == {kind: 1 for kind in INDEX}

    # The index is clean now; the corruption is still reported (the lost block as missing, not hidden).
    report = tmp_path / "verify.json"
    code, output = spark_submit("jobs/verify.py", "--json", str(report))
    assert code == EXIT_CORRUPT, output
    after = json.loads(report.read_text())
    assert after["problems"] == {"corrupt_blocks": 1, "missing_blocks": 1, "broken_block_lists": 2,
                                 "corrupt_inline_files": 0, **{kind: 0 for kind in INDEX}}
    assert after["exit_code"] == EXIT_CORRUPT and "CORRUPTION" in output and "Traceback" not in output
    sizes = dict(cql.execute(f"SELECT hash, size FROM {DATA_KS}.existing_blocks"))
    assert rot not in sizes and lost not in sizes and sizes[unindexed] > 0 and sizes[resized] > 7


def test_a_lone_block_missing_or_damaged_is_reported_as_any_other(empty_store, spark) -> None:
    """Injects, into two one-block files (their lists are their version rows' ``lone_block``: no file_blocks
    rows), a block's content deleted and another's overwritten. Checks verify reports them as it reports a
    list's blocks: one missing, one corrupt, both files damaged, no broken list (a lone list is whole)."""
    cql = empty_store
    store = Store(cql)
    for name in ("lost", "rot", "clean"):
        put(store, f"l/{name}", os.urandom(10_000))  # under chunk_min: one block
    st = Statements.for_session(cql)
    heads = {n: cql.execute(st.head, (f"l/{n}",)).one() for n in ("lost", "rot", "clean")}
    assert all(h.lone_block is not None for h in heads.values()) and not list(cql.execute(
        f"SELECT id FROM {META_KS}.file_blocks"))
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (heads["lost"].lone_block,))
    cql.execute(cql.prepare(f"UPDATE {DATA_KS}.blocks SET content = ? WHERE hash = ?"),
                (b"bit rot" * 100, heads["rot"].lone_block))

    found = verify(spark)
    assert (found.problems["missing_blocks"], found.problems["corrupt_blocks"],
            found.problems["broken_block_lists"]) == (1, 1, 0)
    assert found.examples["missing_blocks"] == [heads["lost"].lone_block.hex()]
    assert found.damaged_examples == [f"l/lost@{heads['lost'].version}", f"l/rot@{heads['rot'].version}"]
    assert found.exit_code == EXIT_CORRUPT


def test_clean_store_exits_zero(empty_store, spark, tmp_path: Path) -> None:
    size = 600_000  # over 2 x chunk_max: a list in file_blocks, of 3+ blocks (100 KB was one block ~1 % of the time)
    (tmp_path / "f").write_bytes(os.urandom(size))
    Store(empty_store).put(tmp_path / "f", "clean/f")
    report = verify(spark)
    assert report.exit_code == 0 and not any(report.problems.values())
    assert report.blocks_checked == len(block_list(empty_store, "clean/f"))
    assert report.bytes_checked == size and "no problems" in report.table()


def test_repair_is_refused_during_a_reclaim_window(cql, spark) -> None:
    open_window(cql, "test-reclaim", WindowMode.ONLINE)
    try:
        with pytest.raises(MaintenanceError, match="refuses to run during the"):
            verify(spark, repair_index=True)
    finally:
        close_window(cql, "test-reclaim")


def test_reclaim_is_refused_while_a_repair_runs(empty_store, spark, monkeypatch) -> None:
    """Injects an online reclaim that starts after ``verify --repair-index`` has begun, and runs the repair inside
    the reclaim's wait (after its index tombstones, before its content deletes): the interleaving that wrote back
    index rows of garbage blocks whose content the reclaim then deleted. Checks that the reclaim is refused (exit
    5, one line) and that every index row still has its block."""
    cql = empty_store
    store = Store(cql)
    store.put(io.BytesIO(os.urandom(300_000)), "g/garbage")
    store.remove("g/garbage")
    set_commit_bound(cql, 1)
    real_verify = verify_module._verify
    refused: list[MaintenanceError] = []

    def reclaim_meanwhile(spark, endpoint, repair, *more):
        def repair_during_the_wait(message: str) -> None:
            if message.startswith("waiting") and "for stores" in message:
                report.append(real_verify(spark, endpoint, repair, *more))

        report: list = []
        try:
            reclaim(spark, cql, online=True, log=repair_during_the_wait)
        except MaintenanceError as err:
            refused.append(err)
        return report[0] if report else real_verify(spark, endpoint, repair, *more)

    monkeypatch.setattr(verify_module, "_verify", reclaim_meanwhile)
    try:
        verify(spark, repair_index=True)
    finally:
        set_commit_bound(cql, SAFETY.commit_bound_s)
    assert len(refused) == 1 and refused[0].exit_code == EXIT_MAINTENANCE
    assert str(refused[0]).startswith("another reclaim is running: online reclaim window held by verify@")
    indexed = {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")}
    stored = {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.blocks")}
    assert indexed and indexed <= stored
    assert current_window(cql) is None  # the repair's window is gone with it


def test_checks_every_retained_version_not_only_heads(inline_store, spark) -> None:
    """Injects damage into versions that are no longer heads but are retained (a ``--keep-last 2`` policy keeps
    them), with every head intact: two rows of an older version's block list swapped, the content row of a block
    only an older version names deleted, and a byte of an older inline version's content changed. Checks that
    verify reports each one with its version (``ID@VERSION``): one broken list, one missing block (and its index
    row without a block), one corrupt inline version, one damaged version; and that the executors' re-read
    confirms an older version while it is retained and drops it once forget has. The heads-only verify reported
    none of the three corruptions."""
    cql, store = inline_store, Store(inline_store)
    store.set_retention("h/", Policy(keep_last=2))
    for file_id in ("h/swapped", "h/lost"):
        for _ in range(2):
            put(store, file_id, os.urandom(600_000))  # over 2 x chunk_max: at least 3 blocks
    put(store, "h/inline", b"the old small version")
    put(store, "h/inline", b"the new small version")
    old = {file_id: store.versions(file_id)[1].file.version for file_id in ("h/swapped", "h/lost", "h/inline")}
    first, second = list(cql.execute(Statements.for_session(cql).file_blocks, ("h/swapped", old["h/swapped"])))[:2]
    swap = cql.prepare(f"UPDATE {META_KS}.file_blocks SET hash = ?, size = ? WHERE id = ? AND version = ? "
                       f"AND block_offset = ?")
    cql.execute(swap, (second.hash, second.size, "h/swapped", old["h/swapped"], first.block_offset))
    cql.execute(swap, (first.hash, first.size, "h/swapped", old["h/swapped"], second.block_offset))
    lost = next(iter(cql.execute(Statements.for_session(cql).file_blocks, ("h/lost", old["h/lost"])))).hash
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (lost,))
    cql.execute(cql.prepare(f"UPDATE {META_KS}.versions SET content = ? WHERE id = ? AND version = ?"),
                (b"the odd small version", "h/inline", old["h/inline"]))

    found = verify(spark)
    assert found.problems == {**{kind: 0 for kind in found.problems}, "missing_blocks": 1, "broken_block_lists": 1,
                              "corrupt_inline_files": 1, "index_without_block": 1}
    assert found.examples["broken_block_lists"] == [f"h/swapped@{old['h/swapped']}"]
    assert found.examples["corrupt_inline_files"] == [f"h/inline@{old['h/inline']}"]
    assert found.examples["missing_blocks"] == [lost.hex()]
    assert found.damaged_files == 1 and found.damaged_examples == [f"h/lost@{old['h/lost']}"]
    assert found.exit_code == EXIT_CORRUPT and "CORRUPTION" in found.table()

    checks = _Checks(cql)
    scanned = SimpleNamespace(kind="broken_block_lists", id="h/swapped", version=str(old["h/swapped"]))
    assert checks.still_differs(scanned)
    store.remove_retention("h/")
    forget(cql, store.namespace, "h/", now=time.time() + 10 * SAFETY.commit_bound_s)  # past the grace
    assert not checks.still_differs(scanned)
