"""Three real nodes, RF 3: with one node stopped, QUORUM writes and reads still succeed.

Marked ``cluster``: ``make test-all`` runs it (about two minutes: three
nodes start one at a time).
"""

from __future__ import annotations

import os

import pytest

from casstor_ops.cluster.connection import connect, endpoint_from_env
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.schema import init_store

from .support import THREE_NODE_PORTS as PORTS

pytestmark = pytest.mark.cluster


def test_quorum_survives_one_node_down(three_nodes: LocalCluster, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CASSTOR_NODES", ",".join(three_nodes.contact_points))
    monkeypatch.setenv("CASSTOR_PORT", str(PORTS.cql))
    monkeypatch.setenv("CASSTOR_CONSISTENCY", "QUORUM")
    assert "UN  127.0.0.3" in three_nodes.nodetool("status")
    session = connect(endpoint_from_env())
    try:
        init_store(session)  # default RF is 3 with three nodes up
        rf = session.cluster.metadata.keyspaces[DATA_KS].replication_strategy.replication_factor
        assert rf == 3
        store = Store(session)
        before = tmp_path / "before.bin"
        before.write_bytes(os.urandom(700_000))
        store.put(before, "before")

        three_nodes.node(3).stop(log=lambda _: None)
        after = tmp_path / "after.bin"
        after.write_bytes(os.urandom(900_000) + before.read_bytes())
        result = store.put(after, "after")          # QUORUM writes with 2 of 3 up
        assert result.bytes == after.stat().st_size
        for name, src in (("before", before), ("after", after)):  # QUORUM reads with 2 of 3 up
            out = tmp_path / f"{name}.out"
            store.restore(name, out)
            assert out.read_bytes() == src.read_bytes()
    finally:
        session.cluster.shutdown()
