"""python -m bench.store_restore end to end in --quick mode on the session's test node, restic included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.paths import project_root
from casstor_ops.store.api import Store

from bench.raw_driver import SCRATCH_KS
from bench.store_restore import READ_KEYS_PER_REQUEST
from bench.store_restore_report import RATIOS, conclusions, format_report

FIGURES = ["chunk_hash_one_core", "raw_write_best", "raw_read_best", "store_new", "store_dup", "restore",
           "store_new_procs", "store_dup_procs", "restore_procs", "restic_backup", "restic_restore"]


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.store_restore", *args], capture_output=True, text=True, timeout=600,
                          cwd=project_root())


def test_quick_bench_measures_every_figure_and_cleans_up(cql, local_cluster: LocalCluster, tmp_path: Path) -> None:
    output = tmp_path / "store_restore.json"
    proc = _bench("--quick", "--procs", "2", "--output", str(output))
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(output.read_text())

    assert sorted(results["mbps"]) == sorted(FIGURES)
    assert all(value > 0 for value in results["mbps"].values()), results["mbps"]
    for name in RATIOS:
        for key in (name, name + "_procs"):
            ratio = results["ratios"][key]
            assert ratio["value"] > 0 and ratio["met"] == (ratio["value"] >= ratio["goal"]), ratio
    sweeps = results["raw_sweeps"]
    assert sorted(sweeps) == sorted([f"read {n} block(s)/request" for n in READ_KEYS_PER_REQUEST] + ["write"])
    assert all(sorted(s) == ["16", "48"] and min(s.values()) > 0 for s in sweeps.values()), sweeps
    assert results["raw_best"]["raw_read_best"].startswith("read ")
    # Every figure carries its CPU: the client's, and the test node's (it is local); one-process ratios the bound.
    costs = results["cpu_ms_per_mb"]
    assert sorted(costs) == sorted(FIGURES)
    assert all(c["client_ms_per_mb"] > 0 and c["node_ms_per_mb"] is not None for c in costs.values()), costs
    assert all(results["ratios"][name]["cpu_bound"] > 0 for name in RATIOS)

    dedup = results["dedup"]
    assert dedup["logical_bytes"] == results["sizes"]["new_data_bytes"] + results["sizes"]["tree_bytes"]
    # New data is stored once; every later tree version reuses most of the previous one's blocks.
    assert results["sizes"]["new_data_bytes"] < dedup["casstor_stored_bytes"] < dedup["logical_bytes"]
    assert dedup["restic_raw_data_bytes"] > 0 and dedup["casstor_vs_restic_stored"] > 0
    versions = results["tree_versions"]
    assert [v["version"] for v in versions] == ["v000", "v001", "v002"]
    assert versions[0]["new_bytes"] == versions[0]["bytes"] and versions[1]["new_bytes"] < versions[1]["bytes"]

    # The printed report and the conclusions come from the same figures.
    assert "store_new_vs_raw_write" in proc.stdout and f"results written to {output}" in proc.stdout
    assert format_report(results).strip() in proc.stdout
    assert any("restic" in line for line in conclusions(results))

    # Nothing left behind: no bench files, no scratch keyspace; the node it did not start keeps running.
    assert list(Store(cql).list(prefix="bench/")) == []
    keyspace = cql.prepare("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?")
    assert cql.execute(keyspace, (SCRATCH_KS,)).one() is None
    assert results["run"]["started_node"] is False and local_cluster.is_up()


def test_bad_flag_is_one_line_error() -> None:
    proc = _bench("--new-mib", "0")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "expected a positive integer" in lines[0], proc.stderr
