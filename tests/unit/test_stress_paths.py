"""cassandra-stress runs in its results directory, so every path handed to it must be absolute."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from casstor_ops.cluster.connection import Endpoint
from casstor_ops.cluster.launcher import ClusterPorts
from casstor_ops.cluster.paths import STRESS_DIR_NAME
from casstor_ops.lab.scratch_cluster import _free_on, _kernel_ports, free_ports
from casstor_ops.lab.stress import stress_command

ADDRESSES = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


def test_relative_paths_become_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injects a relative cache (``CASSTOR_CACHE``), profile and results path, as notebook 03 run from the
    repository root passed ``plots/stress/...``; checks the command names each as an absolute path under
    the caller's directory (a relative ``hdrfile=`` failed: "plots/stress/load-existing_blocks/t8.hdr (No
    such file or directory)")."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CASSTOR_CACHE", "cache")
    launcher = tmp_path / "cache" / STRESS_DIR_NAME / "tools" / "bin" / "cassandra-stress"
    launcher.parent.mkdir(parents=True)
    launcher.touch()
    endpoint = Endpoint(("127.0.0.1",), 9042, embedded=False)

    cmd = stress_command(Path("profiles/existing_blocks.yaml"), "ops(exists_one=1)", population=10, threads=4,
                         n=10, duration_s=None, endpoint=endpoint,
                         hdr_file=Path("plots/stress/load-existing_blocks/t8.hdr"))

    assert cmd[0] == str(launcher)
    assert f"profile={tmp_path}/profiles/existing_blocks.yaml" in cmd
    assert f"hdrfile={tmp_path}/plots/stress/load-existing_blocks/t8.hdr" in cmd
    paths = [arg.partition("=")[2] if "=" in arg else arg for arg in cmd if "/" in arg]
    assert paths and all(os.path.isabs(p) for p in paths), paths


def test_jmx_port_is_passed_for_a_cluster_of_its_own() -> None:
    endpoint = Endpoint(("127.0.0.1", "127.0.0.2"), 9042, embedded=False)
    with_jmx = stress_command(Path("/p.yaml"), "ops(insert=1)", population=5, threads=1, n=5, duration_s=None,
                              endpoint=endpoint, hdr_file=Path("/r/t1.hdr"), jmx_port=40000)
    without = stress_command(Path("/p.yaml"), "ops(insert=1)", population=5, threads=1, n=5, duration_s=None,
                             endpoint=endpoint, hdr_file=Path("/r/t1.hdr"))
    assert "jmx=40000" in with_jmx and not any(a.startswith("jmx=") for a in without)


def test_free_ports_are_distinct_and_jmx_has_one_per_node() -> None:
    ports = free_ports(3)
    jmx = range(ports.jmx_base, ports.jmx_base + 3)
    assert len({ports.cql, ports.storage}) == 2 and ports.cql not in jmx and ports.storage not in jmx


def test_the_jmx_range_never_overlaps_the_cql_or_storage_port() -> None:
    """Injects: candidate ports in an order where the JMX base is free and differs from the CQL and storage
    ports but its range [base, base + nodes) covers one of them (the kernel may offer such a base). Checks: such
    bases are passed over and the first whose whole range is clear of both is taken."""
    block = next(base for base in _kernel_ports() if all(_free_on(p, ADDRESSES) for p in range(base, base + 7)))
    ports = free_ports(3, candidates=[block + 1, block + 3, block, block + 2, block + 4])
    assert ports == ClusterPorts(cql=block + 1, storage=block + 3, jmx_base=block + 4)
