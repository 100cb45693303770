"""Reclaim against the real node and local Spark: plan, missing blocks, the offline window, online reclaim."""

from __future__ import annotations

import io
import random
import re
import threading
import time
import uuid
from dataclasses import replace

import pytest
from cassandra.util import uuid_from_time

from casstor_ops.errors import EXIT_CORRUPT, CasstorError, CorruptionError, MaintenanceError
from casstor_ops.ops import reclaim as reclaim_module
from casstor_ops.ops.reclaim import reclaim
from casstor_ops.ops.verify import verify
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.reclaim_window import WindowMode, current_window
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import commit as commit_module
from casstor_ops.store.history.forget import forget
from casstor_ops.store.history.policy import Policy
from casstor_ops.store.namespace.entries import Namespace, version_micros

from .support import (SESSION_SETTINGS, block_lists, head_rows, past_the_grace, put, restored, run_casstor,
                      spark_submit)

KiB = 1024


@pytest.fixture()
def store(empty_store):
    yield Store(empty_store)
    set_commit_bound(empty_store, SAFETY.commit_bound_s)


def index_rows(cql) -> dict[bytes, int]:
    return {r.hash: r.size for r in cql.execute(f"SELECT hash, size FROM {DATA_KS}.existing_blocks")}


def content_keys(cql) -> set[bytes]:
    stmt = cql.prepare(f"SELECT hash FROM {DATA_KS}.blocks")
    bound = stmt.bind(())
    bound.fetch_size = 20  # blob partitions: small pages
    return {r.hash for r in cql.execute(bound)}


def head_references(cql) -> set[bytes]:
    """Blocks named by the current heads (a one-block head names it in its row), read with the driver
    (independently of references.py)."""
    lists = block_lists(cql)
    return {digest for head in head_rows(cql) for digest, _ in lists.get((head.id, head.version), [])}


def shared_corpus(seed: int = 1) -> dict[str, bytes]:
    rng = random.Random(seed)
    base = rng.randbytes(600 * KiB)
    return {"a": base + rng.randbytes(300 * KiB), "b": base + rng.randbytes(300 * KiB),
            "c": rng.randbytes(400 * KiB), "d": base[:300 * KiB] + rng.randbytes(200 * KiB)}


def forget_superseded(cql) -> None:
    """Drop every superseded version and delete marker with its block list, as forget does (``make_plan`` and
    ``execute`` alone do not forget): what those versions alone named is garbage from then on."""
    past_the_grace(cql)
    forget(cql, Namespace.for_session(cql, SESSION_SETTINGS.directory_rows))


def make_garbage(store: Store) -> dict[str, bytes]:
    """Four files sharing blocks; b overwritten, c removed. Returns the committed contents."""
    files = shared_corpus()
    for file_id, data in files.items():
        put(store, file_id, data)
    files["b"] = random.Random(2).randbytes(250 * KiB)
    put(store, "b", files["b"])
    store.remove("c")
    del files["c"]
    return files


def test_plan_then_execute_removes_exactly_the_garbage(store, spark, capsys) -> None:
    """Injects garbage: b overwritten and c removed, then forgotten (a dry run plans before forget, so the
    superseded versions are forgotten first). Checks the dry run plans exactly the blocks no head names and deletes
    nothing, and the reclaim then deletes exactly those, leaves no stale list and every file restores."""
    cql = store.session
    files = make_garbage(store)
    forget_superseded(cql)
    before = index_rows(cql)
    referenced = head_references(cql)
    garbage = set(before) - referenced
    assert garbage and referenced & set(before)  # the scenario has both

    dry = reclaim(spark, cql, dry_run=True)
    assert (dry.exit_code, dry.stats) == (0, None)
    out = capsys.readouterr().out
    assert "dry run: nothing deleted" in out
    plan = dry.plan
    assert (plan.candidates.blocks, plan.candidates.bytes) == (len(garbage), sum(before[h] for h in garbage))
    assert re.search(rf"garbage: to delete +{len(garbage):,} ", out)
    assert {bytes(r.hash) for r in plan.candidate_rows.collect()} == garbage
    assert (plan.kept.blocks, plan.missing.blocks) == (len(referenced), 0)
    assert plan.stale_lists == 0  # forget dropped b's superseded and c's removed lists with their versions
    assert index_rows(cql) == before and content_keys(cql) == set(before)

    done = reclaim(spark, cql)
    assert done.exit_code == 0
    # Forget dropped b's superseded and c's removed versions with their lists: none is left stale.
    assert (done.stats.deleted.blocks, done.stats.deleted_lists) == (len(garbage), 0)
    assert "reclaim done" in capsys.readouterr().out
    assert set(index_rows(cql)) == referenced == content_keys(cql)
    assert cql.execute(f"SELECT count(*) FROM {META_KS}.file_blocks").one()[0] == \
        sum(r.blocks for r in head_rows(cql, "blocks, lone_block") if r.lone_block is None)
    assert current_window(cql) is None
    for file_id, data in files.items():
        assert restored(store, file_id) == data


@pytest.mark.parametrize("online", [False, True])
def test_a_block_named_only_by_a_version_row_is_kept(store, spark, online: bool) -> None:
    """Injects garbage (make_garbage, forgotten) beside one-block files, whose block lists are their version rows'
    ``lone_block`` (no file_blocks rows): each overwritten once under keep_last=2, so an older version is retained
    too. Checks reclaim (offline, and online, commit bound 1 s) deletes the garbage and keeps every such block: each
    head and each retained older version restores byte-exact. Fails when the mark phase reads file_blocks alone."""
    cql = store.session
    rng = random.Random(29)
    store.set_retention("k/", Policy(keep_last=2))
    old = {f"k/{i}": rng.randbytes(10 * KiB) for i in range(8)}  # under chunk_min: one block each
    new = {name: rng.randbytes(10 * KiB) for name in old}
    for files in (old, new):
        for name, data in files.items():
            put(store, name, data)
    make_garbage(store)
    forget_superseded(cql)  # leaves the commit bound at 1 s
    assert not [r for r in cql.execute(f"SELECT id FROM {META_KS}.file_blocks") if r.id.startswith("k/")]

    done = reclaim(spark, cql, online=online)
    assert done.exit_code == 0 and done.stats.deleted.blocks > 0
    for name in old:
        newest, older = (v.file for v in store.versions(name))
        assert restored(store, name) == new[name], name
        out = io.BytesIO()
        store.restore(name, out, head=older)
        assert out.getvalue() == old[name], name


def test_plan_reads_the_heads_once(store, spark, monkeypatch) -> None:
    """Injects, in the middle of planning (after the referenced blocks were computed, before the stale block
    lists are), an overwrite of a file and a forget of the old version that dropped its row and not yet its list
    (a ``casstor forget`` running beside a dry run, or killed between its two deletes). Checks that the plan
    stays one picture: the old version, retained for its blocks (kept), is not a stale block list either (two
    readings of the retained versions deleted its list, so nothing named those blocks any more; the soak then
    found them kept without a reason). The next plan sees the drop: the old list is stale and its own blocks are
    garbage."""
    cql = store.session
    put(store, "x", random.Random(21).randbytes(200 * KiB))
    old_version = str(store.stat("x").version)
    own_blocks = head_references(cql)
    past_the_grace(cql)  # x's list is older than 2 x bound: stale as soon as x is no longer a head
    real_stale_block_lists = reclaim_module.stale_block_lists

    def overwrite_first(*args, **kwargs):
        put(store, "x", random.Random(22).randbytes(200 * KiB))
        version = uuid.UUID(old_version)
        cql.execute(Statements.for_session(cql).delete_version_at, (version_micros(version), "x", version))
        return real_stale_block_lists(*args, **kwargs)

    monkeypatch.setattr(reclaim_module, "stale_block_lists", overwrite_first)
    plan = reclaim_module.make_plan(spark, cql)
    assert {bytes(r.hash) for r in plan.candidate_rows.collect()} & own_blocks == set()
    assert old_version not in {r.version for r in plan.stale_rows.collect()}
    monkeypatch.undo()

    after = reclaim_module.make_plan(spark, cql)
    assert old_version in {r.version for r in after.stale_rows.collect()}
    assert {bytes(r.hash) for r in after.candidate_rows.collect()} == own_blocks


def test_missing_blocks_stop_reclaim_unless_forced(store, spark) -> None:
    """Injects a head's block lost (content and index row) and another's index row lost, beside garbage that
    reclaim's forget frees (b overwritten, c removed, past the grace). Checks reclaim refuses and deletes
    nothing, then with ``force`` reports 1 missing and 1 repairable, repairs the index row and deletes the
    garbage."""
    cql = store.session
    make_garbage(store)
    past_the_grace(cql)
    lost, unindexed = sorted(head_references(cql))[:2]
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (lost,))
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = ?"), (lost,))
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = ?"), (unindexed,))
    before = index_rows(cql)

    with pytest.raises(CorruptionError, match=f"1 referenced block\\(s\\) are missing \\(e.g. {lost.hex()}\\)"):
        reclaim(spark, cql)
    assert index_rows(cql) == before and current_window(cql) is None

    forced = reclaim(spark, cql, force=True)
    assert (forced.plan.missing.blocks, forced.plan.repairable.blocks, forced.plan.missing_sample) == \
        (1, 1, [lost.hex()])
    assert (forced.exit_code, forced.stats.repaired_index_rows) == (EXIT_CORRUPT, 1)
    assert set(index_rows(cql)) == head_references(cql) - {lost}   # garbage gone, the lost index row repaired


def test_job_exit_code_and_one_line_error_for_missing_blocks(store, spark) -> None:
    cql = store.session
    put(store, "x", random.Random(5).randbytes(100 * KiB))
    lost = next(iter(head_references(cql)))
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (lost,))
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = ?"), (lost,))
    code, output = spark_submit("jobs/reclaim.py")
    assert code == EXIT_CORRUPT, output[-2000:]
    message = (f"casstor: 1 referenced block(s) are missing (e.g. {lost.hex()}): nothing was deleted; "
               f"find the damaged files with the verify job, or reclaim anyway with --force")
    assert message in output and output.count("casstor: ") == 1 and "Traceback" not in output
    assert "missing (referenced, not stored)" in output


def test_offline_window_refuses_writers_and_a_crash_resumes(store, spark, tmp_path, monkeypatch, capsys) -> None:
    """Injects a crash of an offline reclaim between its index deletes and its content deletes (garbage: b
    overwritten and c removed, past the grace, so reclaim's forget frees it). Checks the window stays open and
    refuses writers with one line, and a re-run resumes, finds the content whose index row the crash deleted and
    leaves exactly the heads' blocks."""
    cql = store.session
    files = make_garbage(store)
    past_the_grace(cql)
    referenced = head_references(cql)
    real_apply = reclaim_module._apply

    def crash_before_content(df, statement_name, params):
        if statement_name == "delete_block_at":
            raise RuntimeError("simulated crash")
        return real_apply(df, statement_name, params)

    monkeypatch.setattr(reclaim_module, "_apply", crash_before_content)
    with pytest.raises(RuntimeError, match="simulated crash"):
        reclaim(spark, cql)
    assert "the reclaim window is still open: re-run 'spark-submit jobs/reclaim.py' to resume it, or clear it " \
           "with 'spark-submit jobs/reclaim.py --clear-window'" in capsys.readouterr().err
    window = current_window(cql)
    assert (window.mode, window.state) == (WindowMode.OFFLINE, "deleting-content")

    src = tmp_path / "new.bin"
    src.write_bytes(b"new data")
    refused = run_casstor("store", str(src), "new")
    assert refused.returncode == 5
    lines = refused.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("casstor: writes are refused during the offline reclaim window")
    assert "--clear-window" in lines[0]
    with pytest.raises(MaintenanceError):
        store.remove("a")

    monkeypatch.setattr(reclaim_module, "_apply", real_apply)
    assert reclaim(spark, cql).exit_code == 0  # resumes: finds the content whose index row the crash deleted
    out = capsys.readouterr().out
    assert "resuming the crashed offline reclaim window" in out and "content rows without index row" in out
    assert set(index_rows(cql)) == referenced == content_keys(cql)
    assert current_window(cql) is None
    assert run_casstor("store", str(src), "new").returncode == 0
    for file_id, data in files.items():
        assert restored(store, file_id) == data


@pytest.mark.slow  # a spark-submit of its own
def test_job_clear_window_option(store, spark) -> None:
    from casstor_ops.store.coordination.reclaim_window import open_window

    open_window(store.session, "reclaim@crashed:1", WindowMode.OFFLINE)
    code, output = spark_submit("jobs/reclaim.py", "--clear-window")
    assert code == 0, output[-2000:]
    assert "cleared the offline reclaim window held by reclaim@crashed:1" in output
    assert current_window(store.session) is None


class Writers:
    """Threads that store, overwrite and remove files built from a shared pool of segments."""

    def __init__(self, store: Store, pool: list[bytes], threads: int = 3) -> None:
        self.store = store
        self.pool = pool
        self.committed: dict[str, bytes | None] = {}
        self.ops = 0
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]

    def _run(self, n: int) -> None:
        rng = random.Random(100 + n)
        ids = [f"w{n}/{i}" for i in range(4)]
        while not self._stop.is_set():
            file_id = rng.choice(ids)
            try:
                if rng.random() < 0.25 and self.committed.get(file_id) is not None:
                    self.store.remove(file_id)
                    data = None
                else:
                    data = b"".join(rng.sample(self.pool, 2)) + rng.randbytes(20 * KiB)
                    put(self.store, file_id, data)
            except CasstorError as err:  # e.g. the commit bound passed under load: the head did not move
                self.failures.append(str(err))
                continue
            with self._lock:
                self.committed[file_id] = data
                self.ops += 1

    def __enter__(self) -> "Writers":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()


def test_online_reclaim_beside_writers(store, spark, capsys) -> None:
    cql = store.session
    rng = random.Random(9)
    pool = [rng.randbytes(150 * KiB) for _ in range(6)]
    for i, segment in enumerate(pool):            # every pool block becomes garbage before reclaim starts
        put(store, f"old/{i}", segment + rng.randbytes(50 * KiB))
        store.remove(f"old/{i}")
    files = make_garbage(store)
    forget_superseded(cql)  # the writers' own superseded versions are kept by the grace during the reclaim
    garbage_before = set(index_rows(cql)) - head_references(cql)
    set_commit_bound(cql, 3)
    began_us = int(time.time() * 1_000_000)
    began_uuid_time = uuid_from_time(time.time()).time

    with Writers(store, pool) as writers:
        assert reclaim(spark, cql, online=True).exit_code == 0
        ops_during = writers.ops
    assert ops_during > 0, writers.failures
    out = capsys.readouterr().out
    assert "rescued (in use again)" in out

    for file_id, data in {**files, **writers.committed}.items():
        if data is None:
            with pytest.raises(CasstorError, match="no such file"):
                store.stat(file_id)
        else:
            assert restored(store, file_id) == data, file_id
    # Every block that was garbage when reclaim began is gone, unless a writer used it meanwhile:
    # it is referenced now, or re-uploaded, or named by a block list written since (a file committed
    # and then removed or overwritten while reclaim ran).
    referenced = head_references(cql)
    written_since = {r.hash for r in cql.execute(
        f"SELECT hash, WRITETIME(size) AS written FROM {DATA_KS}.existing_blocks") if r.written >= began_us}
    listed_since = {r.hash for r in cql.execute(f"SELECT version, hash FROM {META_KS}.file_blocks")
                    if r.version.time >= began_uuid_time}
    left = (set(index_rows(cql)) | content_keys(cql)) & garbage_before
    assert left <= referenced | written_since | listed_since
    assert not garbage_before <= left  # and reclaim did delete
    assert referenced <= set(index_rows(cql)) and referenced <= content_keys(cql)


def test_online_scan_keeps_content_indexed_during_the_wait(store, spark) -> None:
    """Injects a block row without index row (a store between its content and its index write, or a crashed
    reclaim) that a writer indexes while an online ``--scan-blocks`` reclaim waits (after its index tombstones
    at T); checks that the block is rescued (content and index row kept, never an index row without content),
    while a content-only row nobody indexed and indexed garbage (a removed file's, forgotten by the reclaim) are
    still deleted."""
    cql = store.session
    st = Statements.for_session(cql)
    put(store, "kept", random.Random(11).randbytes(100 * KiB))
    put(store, "gone", random.Random(12).randbytes(100 * KiB))
    store.remove("gone")
    garbage = set(index_rows(cql)) - head_references(cql)
    late, orphan = (random.Random(13).randbytes(30 * KiB), random.Random(14).randbytes(30 * KiB))
    for content in (late, orphan):
        cql.execute(st.insert_block, (block_hash(content), len(content), None, content))
    past_the_grace(cql)  # reclaim's forget drops gone's version and marker: its blocks are garbage

    def index_late_block_during_the_wait(message: str) -> None:
        if message.startswith("waiting") and "for stores" in message:
            cql.execute(st.insert_existing, (block_hash(late), len(late), len(late)))  # the client's clock: above T

    outcome = reclaim(spark, cql, online=True, scan_blocks=True, log=index_late_block_during_the_wait)
    assert outcome.plan.unindexed.blocks == 2 and outcome.stats.rescued.blocks == 1
    assert block_hash(late) in content_keys(cql) and block_hash(late) in index_rows(cql)
    assert block_hash(orphan) not in content_keys(cql) | set(index_rows(cql))
    assert not garbage & (content_keys(cql) | set(index_rows(cql)))
    assert set(index_rows(cql)) <= content_keys(cql)


@pytest.mark.parametrize("size", [200 * KiB, 8 * KiB], ids=["blocks", "lone-small-block"])
def test_a_late_head_write_checks_its_blocks_again(store, spark, monkeypatch, size: int) -> None:
    """Injects a head write held back from just after the store's bound check until an online reclaim has
    re-read the heads and deleted the blocks the version names (as if it waited behind other requests in the
    connection's queue, or on a stalled node): the blocks were garbage, still indexed, when the store found
    them (a removed file's, past forget's grace, so the reclaim's forget drops its versions). Checks that the
    store, acknowledged that late, checks its blocks again and uploads them again: the
    file restores and every block it names is stored. Without that check its head names deleted blocks. The
    same for a file of one block under the chunker's minimum, which its store does not claim."""
    cql = store.session
    data = random.Random(31).randbytes(size)
    put(store, "old", data)
    store.remove("old")
    blocks = set(index_rows(cql))
    past_the_grace(cql)  # reclaim's forget drops old's version and marker: its blocks are garbage
    insert_version = Statements.for_session(cql).insert_version
    held, released = threading.Event(), threading.Event()
    real_execute = cql.execute

    def hold_head_write(statement, *args, **kwargs):
        if statement is insert_version and threading.current_thread().name == "late-head":
            held.set()
            released.wait(120)
        return real_execute(statement, *args, **kwargs)

    failures: list[BaseException] = []

    def store_late() -> None:
        try:
            put(store, "new", data)
        except BaseException as err:  # noqa: BLE001  (reported by the assertion below)
            failures.append(err)

    monkeypatch.setattr(cql, "execute", hold_head_write)
    writer = threading.Thread(target=store_late, name="late-head")
    writer.start()
    try:
        assert held.wait(60), failures
        outcome = reclaim(spark, cql, online=True, log=lambda _: None)
        assert outcome.stats.deleted.blocks == len(blocks)  # the head was not there when the reclaim re-read
    finally:
        released.set()
        writer.join(120)
    assert failures == []
    assert restored(store, "new") == data
    assert blocks <= set(index_rows(cql)) and blocks <= content_keys(cql)


@pytest.mark.parametrize("lands", ["during-the-wait", "before-the-list-deletes", "after-the-reclaim"])
def test_a_head_write_held_past_the_plan_keeps_its_block_list(store, spark, monkeypatch, lands: str) -> None:
    """Injects a head write held back from just after the store's bound check until after an online reclaim
    planned: by then its version's list is older than 2 x the bound and no head names it, so the plan counts it
    stale. The write then lands during the reclaim's wait (the store's own late check held off by a longer
    margin: only the reclaim's re-read of the heads can keep the list), after that re-read and before the list
    deletes (the store, acknowledged late, writes its list again: the deletes, stamped T, must not shadow it),
    or after the reclaim. The file's blocks are another file's too, so only the list is at stake. Checks that
    the reclaim completes, the file restores byte-exact and verify finds no broken block list. Without the
    fix the list is deleted and the head names nothing."""
    cql = store.session
    data = random.Random(41).randbytes(200 * KiB)
    put(store, "keeper", data)
    set_commit_bound(cql, 1)
    insert_version = Statements.for_session(cql).insert_version
    held, released = threading.Event(), threading.Event()
    real_execute, real_apply = cql.execute, reclaim_module._apply
    failures: list[BaseException] = []

    def hold_head_write(statement, *args, **kwargs):
        if statement is insert_version and threading.current_thread().name == "late-list":
            held.set()
            released.wait(120)
        return real_execute(statement, *args, **kwargs)

    def store_late() -> None:
        try:
            put(store, "new", data)
        except BaseException as err:  # noqa: BLE001  (reported by the assertion below)
            failures.append(err)

    def land() -> None:
        released.set()
        writer.join(120)

    def land_before_list_deletes(df, statement_name, params):
        if statement_name.startswith("delete_block_list"):
            land()
        return real_apply(df, statement_name, params)

    if lands == "during-the-wait":
        monkeypatch.setattr(commit_module, "SAFETY", replace(SAFETY, late_head_margin_s=3600.0))
    if lands == "before-the-list-deletes":
        monkeypatch.setattr(reclaim_module, "_apply", land_before_list_deletes)
    monkeypatch.setattr(cql, "execute", hold_head_write)
    writer = threading.Thread(target=store_late, name="late-list")
    writer.start()
    try:
        assert held.wait(60), failures
        time.sleep(2.5)  # the version's list is older than 2 x the bound
        outcome = reclaim(spark, cql, online=True,
                          log=lambda msg: land() if lands == "during-the-wait" and msg.startswith("waiting") else None)
        assert outcome.plan.stale_lists == 1  # the held version's list, planned as stale
    finally:
        land()
    assert failures == [] and not writer.is_alive()
    monkeypatch.undo()
    assert restored(store, "new") == data
    assert verify(spark).problems["broken_block_lists"] == 0
