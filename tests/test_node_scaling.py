"""The node-count experiment stops every node it started, even when a run fails half-way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.lab.node_scaling import ScalingPlan, run_node_scaling


def _our_node_alive(pid: int, home: Path) -> bool:
    """Whether ``pid`` is still a JVM of a node under ``home`` (a recycled pid is someone else's)."""
    try:
        return str(home).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_a_failing_run_stops_the_nodes_it_started(tmp_path: Path) -> None:
    """Injects a failure after the experiment's own node is up and its stress keyspace exists (a profile that
    does not exist, so the first cassandra-stress run raises); checks the one-line error comes through and no
    JVM of the experiment's home is left running (pids from the launcher's 'starting, pid N' lines)."""
    home, said = tmp_path / "home", []
    plan = ScalingPlan(node_counts=(1,), profiles=("no-such-profile.yaml",), keys=10, reads=10)
    with pytest.raises(CasstorError, match="stress profile 'no-such-profile.yaml' not found"):
        run_node_scaling(plan, tmp_path / "stress", home=home, log=said.append)
    pids = [int(pid) for pid in re.findall(r"starting, pid (\d+)", "\n".join(said))]
    assert pids, said
    assert not [pid for pid in pids if _our_node_alive(pid, home)]
    assert "node1 (127.0.0.1) stopped" in said
