"""forget and snapshot rm racing stores and an online reclaim (which runs forget first), against the real node
and local Spark: nothing a policy or snapshot keeps is lost, and what nothing keeps is freed."""

from __future__ import annotations

import io
import random
import threading
import time

import pytest

from casstor_ops.ops.reclaim import reclaim
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.history.policy import Policy, Version, kept, policy_for
from casstor_ops.store.namespace.entries import version_micros

from .support import past_the_grace, put

KiB = 1024
POLICIES = {"pol/": Policy(keep_last=3), "day/": Policy(keep_within_s=3600)}
IDS = ["pol/a", "pol/b", "day/c", "snap/d", "snap/e", "none/f", "none/g"]
REMOVED_DURING = {"pol/b", "none/g", "snap/e"}  # the last round removes them (a delete marker)


@pytest.fixture()
def store(empty_store):
    yield Store(empty_store)
    set_commit_bound(empty_store, SAFETY.commit_bound_s)


class History:
    """Every version stored or removed, by ID, with its content (None: a delete marker)."""

    def __init__(self) -> None:
        self.versions: dict[str, list[tuple]] = {i: [] for i in IDS}
        self.lock = threading.Lock()

    def store(self, store: Store, file_id: str, rng: random.Random, base: bytes) -> None:
        data = base + rng.randbytes(120 * KiB)  # blocks shared with the ID's other versions, and its own
        put(store, file_id, data)
        with self.lock:
            self.versions[file_id].append((store.stat(file_id).version, data))

    def remove(self, store: Store, file_id: str) -> None:
        store.remove(file_id)
        with self.lock:
            self.versions[file_id].append((store.versions(file_id)[0].file.version, None))

    def kept(self, snapshots: list) -> dict:
        """version -> content of every version the policies and ``snapshots`` keep now (no grace)."""
        found = {}
        now = int(time.time() * 1_000_000)
        for file_id, stored in self.versions.items():
            newest_first = sorted(stored, key=lambda v: v[0].time, reverse=True)
            versions = [Version(v, version_micros(v), data is None) for v, data in newest_first]
            pins = [s.at_micros for s in snapshots if file_id.startswith(s.prefix)]
            keep = kept(versions, policy_for(file_id, POLICIES), now, pins)
            found.update({(file_id, v): data for v, data in newest_first if v in keep})
        return found


def round_of_stores(store: Store, history: History, rng: random.Random, bases: dict, last: bool = False) -> None:
    for file_id in IDS:
        if last and file_id in REMOVED_DURING:
            history.remove(store, file_id)
        else:
            history.store(store, file_id, rng, bases[file_id])


def read_version(store: Store, file_id: str, version) -> bytes:
    out = io.BytesIO()
    store.read(store.stat(file_id, version=version), out)
    return out.getvalue()


@pytest.mark.slow  # minutes of racing writers and reclaims, like the soak: make test-all
def test_forget_and_snapshot_rm_race_stores_and_online_reclaim(store, spark) -> None:
    """Stores overwrite (and at the end remove) files under two policies, under snapshots and under none, while
    a loop of forgets runs, a snapshot is removed, and an online reclaim (forget, then prune) runs. Checks after
    it that every version a policy or a remaining snapshot keeps restores byte-exact; then, once the grace has
    passed, that a forget and a reclaim leave exactly those versions, their block lists and their blocks. Without
    reclaim knowing history (only heads' blocks referenced), the online reclaim frees the blocks of the older
    versions the policies and snapshots keep, and their restores fail."""
    cql = store.session
    rng = random.Random(28)
    bases = {i: rng.randbytes(150 * KiB) for i in IDS}
    for prefix, policy in POLICIES.items():
        store.set_retention(prefix, policy)
    history = History()
    round_of_stores(store, history, rng, bases)
    store.snapshot("snap/", name="keep")
    round_of_stores(store, history, rng, bases)
    store.snapshot("snap/", name="gone")
    round_of_stores(store, history, rng, bases)
    past_the_grace(cql)  # forgets during the race drop versions

    stop, failures = threading.Event(), []

    def guarded(body):
        def run():
            try:
                body()
            except Exception as err:  # noqa: BLE001  (reported by the assertion below)
                failures.append(err)
        return threading.Thread(target=run)

    def writer():
        rounds = 0
        while not stop.is_set() or rounds < 3:
            round_of_stores(store, history, rng, bases)
            rounds += 1
        round_of_stores(store, history, rng, bases, last=True)

    def forgetter():
        while not stop.is_set():
            store.forget()
            time.sleep(0.3)

    def unpin():
        time.sleep(1.0)
        store.remove_snapshot("gone")

    threads = [guarded(writer), guarded(forgetter), guarded(unpin)]
    for thread in threads:
        thread.start()
    try:
        assert reclaim(spark, cql, online=True).exit_code == 0
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == []
    assert [s.name for s in store.snapshots()] == ["keep"]

    wanted = history.kept(store.snapshots())
    assert any(data is not None and v != store.versions(i)[0].file.version for (i, v), data in wanted.items())
    for (file_id, version), data in wanted.items():
        if data is not None:
            assert read_version(store, file_id, version) == data, (file_id, version)

    time.sleep(2.5)  # past the grace, and the lists forget leaves are older than 2 x the bound
    store.forget()
    reclaim(spark, cql)
    left = {(r.id, r.version) for r in cql.execute(f"SELECT id, version FROM {META_KS}.versions")}
    assert left == set(wanted)
    lists = {(r.id, r.version) for r in cql.execute(f"SELECT DISTINCT id, version FROM {META_KS}.file_blocks")}
    assert lists == {key for key, data in wanted.items() if data is not None}
    named = {r.hash for r in cql.execute(f"SELECT hash FROM {META_KS}.file_blocks")}
    indexed = {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")}
    assert indexed == named
    for (file_id, version), data in wanted.items():
        if data is not None:
            assert read_version(store, file_id, version) == data, (file_id, version)
