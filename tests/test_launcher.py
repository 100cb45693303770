"""The launcher against real nodes: status, idempotent start, port conflicts, stale pid files."""

from __future__ import annotations

import socket

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.launcher import ClusterPorts, LocalCluster

from .support import run_casstor


def test_session_node_is_up(local_cluster: LocalCluster) -> None:
    [status] = local_cluster.status()
    assert status.state == "up" and status.pid is not None and status.address == "127.0.0.1"


def test_cli_status_and_idempotent_start(local_cluster: LocalCluster) -> None:
    status = run_casstor("cluster", "status")
    assert status.returncode == 0, status.stderr
    assert b"node1  127.0.0.1" in status.stdout and b" up " in status.stdout
    again = run_casstor("cluster", "start")
    assert again.returncode == 0, again.stderr
    assert b"already running" in again.stdout


def test_nodetool_status(local_cluster: LocalCluster) -> None:
    out = local_cluster.nodetool("status")
    assert "UN  127.0.0.1" in out


def test_port_taken_is_one_line_error(tmp_path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        cluster = LocalCluster(tmp_path / "c", ports=ClusterPorts(cql=port, storage=27001, jmx_base=27199))
        with pytest.raises(CasstorError, match=rf"port 127\.0\.0\.1:{port} is already in use.*CASSTOR_CQL_PORT"):
            cluster.start(nodes=1)
    assert cluster.status()[0].state == "down"


def test_stale_pid_file_is_cleared(tmp_path) -> None:
    cluster = LocalCluster(tmp_path / "c", ports=ClusterPorts(cql=19043, storage=27002, jmx_base=27299))
    node = cluster.node(1)
    node.root.mkdir(parents=True)
    node.pid_file.write_text("999999\n")
    assert cluster.status() == [] or cluster.status()[0].state == "down"
    assert node.pid() is None


def test_stop_without_cluster_says_so(tmp_path) -> None:
    out = run_casstor("cluster", "stop", env={"CASSTOR_HOME": str(tmp_path)})
    assert out.returncode == 0 and b"no local node is running" in out.stdout


def test_unreachable_cassandra_nodes_is_one_line_error() -> None:
    out = run_casstor("init", env={"CASSTOR_NODES": "127.0.0.1:1"}, timeout=120)
    assert out.returncode == 1
    lines = out.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("casstor: cannot reach Cassandra at 127.0.0.1:1")
    assert "CASSTOR_NODES" in lines[0]


def test_wrong_java_is_one_line_error(tmp_path, monkeypatch) -> None:
    from casstor_ops import jvm

    fake = tmp_path / "jdk25" / "bin" / "java"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\necho \'openjdk version "25.0.1" 2025-10-21\' >&2\n')
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(fake.parent.parent))
    monkeypatch.setenv("PATH", str(fake.parent))
    monkeypatch.setattr(jvm, "_CANDIDATE_HOMES", [])
    jvm.find_java17.cache_clear()
    try:
        with pytest.raises(CasstorError, match="Java 17 not found.*openjdk-17"):
            jvm.find_java17()
    finally:
        jvm.find_java17.cache_clear()
