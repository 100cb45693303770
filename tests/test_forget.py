"""Versions kept by retention policies and snapshots, and forget, against the real node.

Versions are stored at chosen times (the commit's timeuuid clock is replaced for the store), so each policy
term's periods are known; forget is given its own ``now`` (a controllable clock) where the grace must pass.
"""

from __future__ import annotations

import io
import json
import random
import time
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest
from cassandra.util import uuid_from_time

from casstor_ops.errors import CasstorError, NotFoundError
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import catalog, commit as commit_module
from casstor_ops.store.history import forget as forget_module
from casstor_ops.store.history import snapshots as snapshots_module
from casstor_ops.store.history.forget import forget
from casstor_ops.store.history.policy import Policy
from casstor_ops.store.namespace import entries as entries_module
from casstor_ops.store.namespace.listing import entries_under

from .support import put, run_casstor

KiB = 1024
H = 3600
D = 24 * H
EPOCH = datetime(2026, 3, 2, tzinfo=timezone.utc).timestamp()  # a Monday, 00:00 UTC


@pytest.fixture()
def store(empty_store):
    yield Store(empty_store)


def put_at(store: Store, monkeypatch, file_id: str, offset: float, seed: int) -> bytes:
    """Store random content under ``file_id`` as a version of time EPOCH + ``offset`` s; returns the content."""
    data = random.Random(seed).randbytes(100 * KiB)
    monkeypatch.setattr(commit_module, "uuid_from_time", lambda _now: uuid_from_time(EPOCH + offset))
    put(store, file_id, data)
    monkeypatch.undo()
    return data


def remove_at(store: Store, monkeypatch, file_id: str, offset: float) -> None:
    """Remove ``file_id`` with a delete marker of time EPOCH + ``offset`` s."""
    monkeypatch.setattr(catalog, "uuid_from_time", lambda _now: uuid_from_time(EPOCH + offset))
    store.remove(file_id)
    monkeypatch.undo()


def version_times(store: Store, file_id: str) -> list[float]:
    """Offsets from EPOCH of the versions of ``file_id`` left, newest first."""
    try:
        found = store.versions(file_id)
    except NotFoundError:
        return []
    return [round((v.file.version.time - 0x01B21DD213814000) / 1e7 - EPOCH) for v in found]


def content_of(store: Store, file_id: str, offset: float) -> bytes:
    """The content of the version of ``file_id`` at EPOCH + ``offset``, restored through its version."""
    wanted = next(v.file.version for v in store.versions(file_id)
                  if round((v.file.version.time - 0x01B21DD213814000) / 1e7 - EPOCH) == offset)
    out = io.BytesIO()
    store.read(store.stat(file_id, version=wanted), out)
    return out.getvalue()


def block_lists(cql) -> set[tuple[str, object]]:
    return {(r.id, r.version) for r in cql.execute(f"SELECT DISTINCT id, version FROM {META_KS}.file_blocks")}


TERMS = [  # (policy, version offsets, offsets kept)
    (Policy(keep_last=2), [0, H, 2 * H, 3 * H], [3 * H, 2 * H]),
    (Policy(keep_within_s=2 * D), [0, 10 * D, 19 * D, 20 * D], [20 * D, 19 * D]),
    (Policy(keep_hourly=2), [0, 10, H + 5, H + 50, 5 * H], [5 * H, H + 50]),
    (Policy(keep_daily=2), [0, 2 * H, D, D + H, 7 * D], [7 * D, D + H]),
    (Policy(keep_weekly=2), [0, D, 7 * D, 8 * D, 35 * D], [35 * D, 8 * D]),
    (Policy(keep_monthly=2), [0, D, 8 * D, 35 * D], [35 * D, 8 * D]),
]


@pytest.mark.parametrize("policy, offsets, expected", TERMS, ids=lambda x: x.describe() if isinstance(x, Policy)
                         else None)
def test_forget_by_each_policy_term(store, monkeypatch, policy, offsets, expected) -> None:
    """Stores versions at chosen times under a policy, and a file outside it; forget drops exactly what the
    term does not keep (rows and block lists), every kept version restores byte-exact, and the file under no
    policy keeps its newest version only."""
    contents = {o: put_at(store, monkeypatch, "kept/f", o, seed=o) for o in offsets}
    for o in offsets:
        put_at(store, monkeypatch, "other/g", o, seed=o + 1)
    store.set_retention("kept/", policy)
    store.set_retention("kept/f/", Policy(keep_last=99))  # a longer prefix, but not of kept/f: no effect
    report = store.forget()
    assert version_times(store, "kept/f") == expected
    assert version_times(store, "other/g") == [max(offsets)]
    assert len(report.dropped) == 2 * len(offsets) - len(expected) - 1
    for o in expected:
        assert content_of(store, "kept/f", o) == contents[o]
    assert len(block_lists(store.session)) == len(expected) + 1


def test_a_removed_file_without_policy_goes_entirely(store, monkeypatch) -> None:
    """No policy, newest a delete marker: forget drops every version and the directory entry."""
    put_at(store, monkeypatch, "d/x", 0, 1)
    put_at(store, monkeypatch, "d/x", H, 2)
    remove_at(store, monkeypatch, "d/x", 2 * H)
    put_at(store, monkeypatch, "d/y", 0, 3)
    report = store.forget("d/")
    assert (report.withdrawn, version_times(store, "d/x"), version_times(store, "d/y")) == (["d/x"], [], [0])
    st = Statements.for_session(store.session)
    assert [e.name for e in entries_under(store.session, st, "d/", include_deleted=True)] == ["y"]
    assert block_lists(store.session) == {("d/y", store.stat("d/y").version)}


# ID -> its history: version offsets, then (None) a delete marker one hour after the last
HISTORIES = {"w/a": [0, H, 2 * H], "w/b": [0], "w/c": [0, H, None], "w/d": [0, H], "w/e": [0, None]}


def store_histories(store: Store, monkeypatch) -> dict[str, bytes]:
    """Store HISTORIES; returns each live ID's newest content."""
    newest = {}
    for file_id, offsets in HISTORIES.items():
        for n, offset in enumerate(offsets):
            if offset is None:
                remove_at(store, monkeypatch, file_id, offsets[n - 1] + H)
            else:
                newest[file_id] = put_at(store, monkeypatch, file_id, offset, seed=10 * n + ord(file_id[-1]))
    return {file_id: data for file_id, data in newest.items() if HISTORIES[file_id][-1] is not None}


def version_rows(cql) -> dict[str, list]:
    """ID -> its version rows, oldest first."""
    rows = {}
    for r in cql.execute(f"SELECT id, version, blocks, lone_block FROM {META_KS}.versions"):
        rows.setdefault(r.id, []).insert(0, r)
    return rows


def spy_rounds(monkeypatch, st: Statements, stop_at: int | str | None = None) -> list[list[tuple]]:
    """Record each set of requests forget sends together as ``[(kind, id or entry name, version or None)]``, kind
    "row", "list" or "entry"; the set numbered ``stop_at`` (from 0), or with ``stop_at="entry"`` the first of
    entries, raises before anything of it is sent."""
    rounds: list[list[tuple]] = []
    real = forget_module.write_all
    kinds = {id(st.delete_version_at): "row", id(st.delete_block_list_at): "list", id(st.delete_entry_at): "entry"}

    def recording(session, requests):
        requests = list(requests)
        sent = [("entry", v[3], None) if kinds[id(s)] == "entry" else (kinds[id(s)], v[1], v[2])
                for s, v in requests]
        if stop_at == len(rounds) or (sent and stop_at == sent[0][0]):
            raise OSError("injected: forget killed before this round")
        rounds.append(sent)
        real(session, requests)

    monkeypatch.setattr(forget_module, "write_all", recording)
    return rounds


def check_forgotten(store: Store, newest: dict[str, bytes], stale_lists: frozenset = frozenset()) -> None:
    """Every live ID of HISTORIES is its newest version alone and restores it; every removed one is gone, but
    for ``stale_lists`` (block lists whose rows are gone: reclaim's to delete)."""
    assert {f.id for f in store.list("w/")} == set(newest)
    for file_id, data in newest.items():
        assert len(version_times(store, file_id)) == 1
        out = io.BytesIO()
        store.restore(file_id, out)
        assert out.getvalue() == data
    for file_id in set(HISTORIES) - set(newest):
        assert version_times(store, file_id) == []
    st = Statements.for_session(store.session)
    assert {e.file.id for e in entries_under(store.session, st, "w/", include_deleted=True)} == set(newest)
    assert {(i, v) for i, v in block_lists(store.session) if i not in newest} <= stale_lists


def test_forget_of_ids_together_sends_each_ids_deletes_in_order(store, monkeypatch) -> None:
    """Forgets HISTORIES two IDs at once, recording what is sent together; checks each round holds at most
    one request of an ID, each ID's deletes come oldest version first, its row before its block list, its entry
    after all of them, and the store ends as a forget of one ID at a time leaves it."""
    newest = store_histories(store, monkeypatch)
    before = version_rows(store.session)
    rounds = spy_rounds(monkeypatch, Statements.for_session(store.session))
    report = forget(store.session, store.namespace, "w/", at_once=2)
    monkeypatch.undo()
    for sent in rounds:
        assert len({file_id for _, file_id, _ in sent}) == len(sent)
    for file_id, rows in before.items():
        dropped = rows if HISTORIES[file_id][-1] is None else rows[:-1]
        expected = [step for r in dropped
                    for step in [("row", file_id, r.version)] + ([("list", file_id, r.version)]
                                                               if r.blocks and r.lone_block is None else [])]
        expected += [("entry", file_id.split("/")[1], None)] if HISTORIES[file_id][-1] is None else []
        assert [step for sent in rounds for step in sent if step[1] in (file_id, file_id.split("/")[1])] == expected
    assert sorted(report.withdrawn) == ["w/c", "w/e"] and report.ids == len(HISTORIES)
    check_forgotten(store, newest)


@pytest.mark.parametrize("stop_at", [1, "entry"], ids=["after-the-first-round", "before-the-entries"])
def test_a_forget_stopped_between_rounds_leaves_each_history_whole_but_its_tail(store, monkeypatch, stop_at) -> None:
    """Injects a forget killed after its first round of deletes, or after every version's and before the
    entries' (the set raises before it is sent). Checks each ID lost only versions at its old end, every
    version left has its block list, the removed files still read as removed and the live ones restore their
    newest content; a forget run again finishes the work, the entries left without versions too."""
    newest = store_histories(store, monkeypatch)
    before = version_rows(store.session)
    spy_rounds(monkeypatch, Statements.for_session(store.session), stop_at=stop_at)
    with pytest.raises(OSError, match="injected"):
        forget(store.session, store.namespace, "w/")
    monkeypatch.undo()
    left = version_rows(store.session)
    for file_id, rows in before.items():
        if stop_at == 1:
            expected = rows if len(rows) == 1 else rows[1:]
        else:
            expected = [] if HISTORIES[file_id][-1] is None else rows[-1:]
        assert left.get(file_id, []) == expected, file_id
    listed = block_lists(store.session)
    assert all((r.id, r.version) in listed for rows in left.values() for r in rows if r.blocks and r.lone_block is None)
    assert {f.id for f in store.list("w/")} == set(newest)
    for file_id in set(HISTORIES) - set(newest):
        with pytest.raises(NotFoundError):
            store.stat(file_id)
    forget(store.session, store.namespace, "w/")
    stale = frozenset((r.id, r.version) for rows in before.values() for r in rows[:1]) if stop_at == 1 else frozenset()
    check_forgotten(store, newest, stale)


def test_a_store_landing_during_forget_keeps_its_entry(store, monkeypatch) -> None:
    """Injects a store of the ID whose version was started a second before forget withdraws the entry of the
    removed file it drops whole, and that commits just before the withdrawal. Checks that the new version's
    entry survives (the withdrawal is stamped with the dropped marker's time; stamped with forget's clock it
    shadowed the entry) and the file is listed and restores."""
    put_at(store, monkeypatch, "r/x", 0, 1)
    remove_at(store, monkeypatch, "r/x", H)
    fresh = random.Random(9).randbytes(50 * KiB)
    real_withdrawal = entries_module.Namespace.withdrawal

    def store_first(self, file_id, micros):
        with monkeypatch.context() as patch:
            patch.setattr(commit_module, "uuid_from_time", lambda now: uuid_from_time(now - 1))
            put(store, file_id, fresh)
        return real_withdrawal(self, file_id, micros)

    monkeypatch.setattr(entries_module.Namespace, "withdrawal", store_first)
    store.forget("r/")
    monkeypatch.undo()
    assert [f.id for f in store.list("r/")] == ["r/x"]
    out = io.BytesIO()
    store.restore("r/x", out)
    assert out.getvalue() == fresh


def test_a_snapshot_pins_against_forget_until_removed(store, monkeypatch) -> None:
    """A version superseded after a snapshot is kept by forget (run an hour later: the grace has passed) while
    the snapshot exists, restores byte-exact, and is dropped once the snapshot is removed."""
    old = put_at(store, monkeypatch, "s/a", 0, 1)
    put_at(store, monkeypatch, "t/b", 0, 2)
    snapshot = store.snapshot("s/", name="before")
    put(store, "s/a", random.Random(3).randbytes(100 * KiB))
    put(store, "t/b", random.Random(4).randbytes(100 * KiB))
    later = time.time() + 3600
    assert len(store.forget().dropped) == 0  # now: both old versions are in the grace
    forget(store.session, store.namespace, now=later)
    assert version_times(store, "s/a")[-1] == 0 and len(version_times(store, "s/a")) == 2
    assert len(version_times(store, "t/b")) == 1  # not under the snapshot's prefix
    assert content_of(store, "s/a", 0) == old
    assert [s.name for s in store.snapshots()] == [snapshot.name] == ["before"]
    store.remove_snapshot("before")
    forget(store.session, store.namespace, now=later)
    assert len(version_times(store, "s/a")) == 1


def test_forget_dry_run_prints_and_changes_nothing(store, monkeypatch) -> None:
    """The CLI's dry run lists the versions that would go and the bytes only they name, and drops nothing;
    the real forget then drops exactly those."""
    base = random.Random(5).randbytes(200 * KiB)
    monkeypatch.setattr(commit_module, "uuid_from_time", lambda _now: uuid_from_time(EPOCH))
    put(store, "p/x", base + random.Random(6).randbytes(200 * KiB))
    monkeypatch.setattr(commit_module, "uuid_from_time", lambda _now: uuid_from_time(EPOCH + H))
    put(store, "p/x", base + random.Random(7).randbytes(200 * KiB))
    monkeypatch.undo()
    cql = store.session
    rows = {(r.id, r.version) for r in cql.execute(f"SELECT id, version FROM {META_KS}.versions")}
    lists = {v: {r.hash: r.size for r in cql.execute(
        f"SELECT hash, size FROM {META_KS}.file_blocks WHERE id = 'p/x' AND version = {v}")} for _, v in rows}
    old, new = sorted(lists, key=lambda v: v.time)
    exclusive = set(lists[old]) - set(lists[new])
    assert exclusive and set(lists[old]) & set(lists[new])  # some blocks shared, some not
    done = run_casstor("forget", "--dry-run", "--json", "p/")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [d["version"] for d in report["dropped"]] == [str(old)]
    assert (report["freed_blocks"], report["freed_bytes"]) == (len(exclusive), sum(lists[old][h] for h in exclusive))
    text = run_casstor("forget", "--dry-run", "p/").stdout.decode()
    assert f"would drop p/x {old}" in text and f"would free {len(exclusive)} blocks" in text
    assert {(r.id, r.version) for r in cql.execute(f"SELECT id, version FROM {META_KS}.versions")} == rows
    assert len(block_lists(cql)) == 2
    assert run_casstor("forget", "p/").returncode == 0
    assert version_times(store, "p/x") == [H]


def test_retention_and_snapshot_commands(store) -> None:
    """The CLI: set, show (text and JSON), rm of policies; snapshot, snapshots --json, snapshot rm; bad input is
    one line and a non-zero exit."""
    ok = run_casstor("retention", "set", "backups/", "--keep-daily", "7", "--keep-within", "1d12h")
    assert ok.returncode == 0, ok.stderr
    assert run_casstor("retention", "set", "", "--keep-last", "3").returncode == 0
    shown = json.loads(run_casstor("retention", "show", "--json").stdout)
    assert shown == [{"prefix": "", "keep_last": 3},
                     {"prefix": "backups/", "keep_within_s": 129600, "keep_daily": 7}]
    assert "'backups/': --keep-within 1d12h --keep-daily 7" in run_casstor("retention", "show").stdout.decode()
    assert run_casstor("retention", "rm", "backups/").returncode == 0
    for bad in (["retention", "rm", "backups/"], ["retention", "set", "x/"], ["snapshot", "rm", "nope"],
                ["retention", "set", "x/", "--keep-within", "soon"]):
        failed = run_casstor(*bad)
        assert failed.returncode != 0 and len(failed.stderr.decode().strip().splitlines()) == 1, bad
        assert b"Traceback" not in failed.stderr
    assert run_casstor("snapshot", "photos/", "--name", "n1").returncode == 0
    taken = run_casstor("snapshot", "photos/", "--name", "n1")
    assert taken.returncode != 0 and b"exists" in taken.stderr
    assert run_casstor("snapshot", "docs/").returncode == 0  # named by its instant
    listed = json.loads(run_casstor("snapshots", "--json").stdout)
    assert [s["prefix"] for s in listed] == ["photos/", "docs/"] and listed[1]["name"].endswith("Z")
    assert run_casstor("snapshot", "rm", "n1").returncode == 0
    assert [s["name"] for s in json.loads(run_casstor("snapshots", "--json").stdout)] == [listed[1]["name"]]


def test_a_slow_snapshot_is_not_kept(store, monkeypatch) -> None:
    """Injects a snapshot row acknowledged longer than the commit bound after the snapshot's instant (the
    monotonic clock jumps by an hour across the insert), so a forget may have read the snapshots before it and
    dropped what it pins. Checks it fails with one line and leaves no snapshot behind."""
    ticks = iter([0.0, 3600.0])
    monkeypatch.setattr(snapshots_module, "time", SimpleNamespace(time=time.time, monotonic=lambda: next(ticks)))
    with pytest.raises(CasstorError, match="took longer than the commit bound"):
        store.snapshot("s/", name="slow")
    assert store.snapshots() == []
