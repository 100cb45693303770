"""The launcher against real nodes: status, idempotent start, concurrent starts, port conflicts, stale pid files."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from casstor_ops.cluster.launcher import ClusterPorts, LocalCluster, Node
from casstor_ops.errors import EXIT_UNREACHABLE, CasstorError
from casstor_ops.store.cql.keyspaces import META_KS

from .support import TEST_PORTS, run_casstor

# The concurrent-start test's own cluster: clear of the session node and of other sessions' offsets.
RACE_PORTS = ClusterPorts(cql=TEST_PORTS.cql + 450, storage=TEST_PORTS.storage + 450,
                          jmx_base=TEST_PORTS.jmx_base + 450)


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


def test_the_node_writes_trie_indexed_sstables(local_cluster: LocalCluster, cql) -> None:
    """Writes a row to a scratch table and flushes it; checks its one SSTable is BTI's (Cassandra 5's trie-indexed
    format, smaller on disk than the legacy one) and the store's directory index is zstd-compressed."""
    cql.execute("CREATE KEYSPACE IF NOT EXISTS launcher_format WITH replication = "
                "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    cql.execute("CREATE TABLE IF NOT EXISTS launcher_format.t (k int PRIMARY KEY, v text)")
    try:
        cql.execute(cql.prepare("INSERT INTO launcher_format.t (k, v) VALUES (?, ?)"), (1, "x"))
        local_cluster.nodetool("flush", "launcher_format", "t")
        data_files = list((local_cluster.node(1).root / "data" / "data" / "launcher_format").glob("t-*/*-Data.db"))
        assert [f.name.split("-")[2] for f in data_files] == ["bti"]
    finally:
        cql.execute("DROP KEYSPACE launcher_format")
    tables = cql.prepare("SELECT table_name, compression FROM system_schema.tables WHERE keyspace_name = ?")
    compression = {row.table_name: row.compression["class"].rsplit(".", 1)[-1]
                   for row in cql.execute(tables, (META_KS,))}
    assert (compression["dir_entries"], compression["directories"], compression["versions"]) == (
        "ZstdCompressor", "ZstdCompressor", "LZ4Compressor")


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
    """Injects CASSTOR_NODES naming a port where nothing listens; checks one 'cannot reach' line and EXIT_UNREACHABLE."""
    with socket.socket() as probe:  # a port just freed: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = run_casstor("init", env={"CASSTOR_NODES": f"127.0.0.1:{port}"}, timeout=120)
    assert out.returncode == EXIT_UNREACHABLE
    lines = out.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"casstor: cannot reach Cassandra at 127.0.0.1:{port}: ")
    assert "Connection refused" in lines[0] and "CASSTOR_NODES" in lines[0]


def _jvms_under(root: Path) -> list[int]:
    """Pids of the processes whose command line names ``root`` (a node's JVM has its directory in many flags)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(root).encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:  # the process exited while we looked
            continue
    return sorted(pids)


def test_concurrent_starts_launch_one_jvm(tmp_path, monkeypatch) -> None:
    """Injects two threads calling LocalCluster.start(nodes=1) at the same moment on a cluster with no node
    running (its own home and ports), with a 1 s pause between a start's "no node running" check and its
    launch (the window two commands hit); checks both return, the node is up, and exactly one JVM runs for
    it, the one in its pid file (without the start lock each launched a JVM and one was orphaned)."""
    write_config = Node._write_config

    def slow_write_config(node: Node, seeds: str) -> None:
        time.sleep(1.0)
        write_config(node, seeds)

    monkeypatch.setattr(Node, "_write_config", slow_write_config)
    home = tmp_path / "cluster"
    both = threading.Barrier(2)
    failures: list[BaseException] = []

    def start() -> None:
        try:
            cluster = LocalCluster(home, ports=RACE_PORTS, heap_mb=512)
            both.wait()
            cluster.start(nodes=1, log=lambda _: None)
        except BaseException as err:  # reported by the assertion below
            failures.append(err)

    starters = [threading.Thread(target=start) for _ in range(2)]
    try:
        for thread in starters:
            thread.start()
        for thread in starters:
            thread.join()
        node = LocalCluster(home).node(1)
        assert not failures, failures
        assert node.state() == "up"
        assert _jvms_under(node.root) == [node.pid()]
    finally:
        LocalCluster(home).stop(log=lambda _: None)
        for pid in _jvms_under(home):  # an orphan has no pid file: stop it by the pid found above
            os.kill(pid, signal.SIGKILL)


def test_wrong_java_is_one_line_error(tmp_path, monkeypatch) -> None:
    from casstor_ops.cluster import jvm

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
