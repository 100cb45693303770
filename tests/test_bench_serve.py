"""python -m bench.serve end to end, small, on the session's test node: every figure measured, nothing left behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from casstor_ops.cluster.paths import project_root
from casstor_ops.store.api import Store

from bench.raw_driver import SCRATCH_KS


def test_small_bench_measures_every_rate_and_cleans_up(cql, tmp_path: Path) -> None:
    output = tmp_path / "serve.json"
    proc = subprocess.run([sys.executable, "-m", "bench.serve", "--requests", "16", "--concurrency", "2",
                           "--output", str(output)], capture_output=True, text=True, timeout=600, cwd=project_root())
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(output.read_text())
    rates = [key for key in results if key.endswith("_per_s")]
    assert len(rates) == 6 and all(results[key] > 0 for key in rates), results
    assert all(results[key] > 0 for key in ("put_ratio", "get_ratio", "put_ratio_to_store_api",
                                            "get_ratio_to_store_api"))
    assert "HTTP/raw" in proc.stdout and "HTTP/Store API" in proc.stdout
    assert not list(Store(cql).list("bench-serve/"))  # every body deleted
    assert cql.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
                       (SCRATCH_KS,)).one() is None
