"""python -m bench.cluster_scaling --quick: Spark ingest and restore on 1 and 3 nodes of its own, byte-exact,
with MB/s, write amplification and CPU per MB for each node count.

Marked ``cluster``: it starts a 1-node and then a 3-node cluster (several minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from casstor_ops.lab.corpus import tree_files

from .support import ROOT

pytestmark = pytest.mark.cluster


@pytest.mark.timeout(3600)  # not pytest's 900 s: a bench killed mid-run cannot stop the nodes it started
def test_quick_bench_restores_byte_exact_and_prints_figures(tmp_path: Path) -> None:
    output = tmp_path / "cluster_scaling.json"
    run = subprocess.run([sys.executable, "-m", "bench.cluster_scaling", "--quick", "--work", str(tmp_path / "work"),
                          "--output", str(output)], capture_output=True, text=True, timeout=3300, cwd=ROOT,
                         env=dict(os.environ))
    assert run.returncode == 0, run.stdout + run.stderr

    source = tmp_path / "work" / "source"
    files = tree_files(source)
    assert len(files) == 3 * 3 + 4  # 3 versions of 2 files + an extra each, and 4 new files
    for nodes in (1, 3):
        restored = tmp_path / "work" / f"restored-{nodes}" / "scaling"
        for path in files:
            assert (restored / path.relative_to(source)).read_bytes() == path.read_bytes(), (nodes, path)

    results = json.loads(output.read_text())
    assert [(r["nodes"], r["rf"]) for r in results["runs"]] == [(1, 1), (3, 3)]
    for r in results["runs"]:
        for step in ("ingest", "restore"):
            assert r[step]["mbps"] > 0 and r[step]["client_ms_per_mb"] > 0 and r[step]["node_ms_per_mb"] > 0
        assert r["stored_bytes"] > 0 and r["write_amplification"] > r["data_amplification"] > 0
    one, three = results["runs"]
    assert three["data_amplification"] > 2 * one["data_amplification"]  # three replicas of every block
    assert set(results["ratios_top_vs_one_node"]) >= {"ingest MB/s", "restore MB/s", "write amplification"}
    assert "not a speed-up" in run.stdout and "every restore byte-exact: True" in run.stdout
