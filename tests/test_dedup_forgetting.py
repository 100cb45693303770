"""The dedup report's ``forgetting`` table: what forget would drop and free, per retention policy and per snapshot."""

from __future__ import annotations

import os
import time

from casstor_ops.ops.dedup_forgetting import ALL, NO_POLICY, read_rules
from casstor_ops.ops.dedup_stats import compute
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.history.forget import forget
from casstor_ops.store.history.policy import Policy

from .support import put

SIZE = 300_000  # random: several blocks, none shared by chance, none compressible


def list_of(cql, file_id: str, version) -> list:
    return list(cql.execute(Statements.for_session(cql).file_blocks, (file_id, version)))


def test_forgetting_frees_exactly_the_exclusive_bytes(empty_store, spark) -> None:
    """Injects a store where ``--keep-last 1`` on ``p/`` drops two old versions: one whose content a kept file
    still names (shared), one whose content nothing else names (exclusive); and a snapshot of ``s/`` that alone
    keeps an overwritten version. Checks that the policy's row and the ``(all)`` row count both dropped versions
    and free exactly the exclusive version's blocks (bytes and stored bytes as the index has them), which is
    what ``forget --dry-run`` says; that the snapshot's row is its pinned version's blocks; and that a forget
    after the report drops what the table said."""
    cql, store = empty_store, Store(empty_store)
    shared, exclusive, pinned = (os.urandom(SIZE) for _ in range(3))
    store.set_retention("p/", Policy(keep_last=1))
    put(store, "p/shared", shared)
    put(store, "p/kept", shared)                # a kept version names the shared content's blocks
    put(store, "p/exclusive", exclusive)
    put(store, "s/f", pinned)
    store.snapshot("s/", "before")
    for file_id in ("p/shared", "p/exclusive", "s/f"):
        put(store, file_id, os.urandom(SIZE))
    old = store.versions("p/exclusive")[1].file.version
    blocks = {r.hash: r.size for r in list_of(cql, "p/exclusive", old)}
    stored = {r.hash: r.stored_size or r.size for r in cql.execute(
        f"SELECT hash, size, stored_size FROM {DATA_KS}.existing_blocks") if r.hash in blocks}
    pinned_blocks = list_of(cql, "s/f", store.versions("s/f")[1].file.version)
    later = time.time() + 3600  # past the grace (2 x the commit bound), as a forget an hour from now

    table = compute(spark, rules=read_rules(cql, now=later)).tables["forgetting"]
    rows = {(r.scope, r.name): r for r in table.itertuples()}
    assert list(rows) == [("forget", ALL), ("policy", "p/"), ("policy", NO_POLICY), ("snapshot", "before")]
    for key in (("forget", ALL), ("policy", "p/")):
        assert (rows[key].versions, rows[key].logical_bytes) == (2, 2 * SIZE)
        assert (rows[key].exclusive_blocks, rows[key].exclusive_bytes, rows[key].exclusive_stored_bytes) == (
            len(blocks), SIZE, sum(stored.values()))
    assert rows[("policy", "p/")].rule == "--keep-last 1" and rows[("snapshot", "before")].prefix == "s/"
    assert (rows[("policy", NO_POLICY)].versions, rows[("policy", NO_POLICY)].exclusive_bytes) == (0, 0)
    snapshot = rows[("snapshot", "before")]
    assert (snapshot.versions, snapshot.exclusive_blocks, snapshot.exclusive_bytes) == (1, len(pinned_blocks), SIZE)

    dry = forget(cql, store.namespace, dry_run=True, now=later)
    assert dry.freed_bytes == rows[("forget", ALL)].exclusive_bytes and len(dry.dropped) == 2
    forget(cql, store.namespace, now=later)
    assert [len(store.versions(f)) for f in ("p/shared", "p/exclusive", "p/kept", "s/f")] == [1, 1, 1, 2]
