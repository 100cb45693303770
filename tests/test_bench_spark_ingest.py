"""python -m bench.spark_ingest --quick runs end to end against the test node and reports ratios."""

from __future__ import annotations

import json
from pathlib import Path

from .support import head_rows, run_bench


def test_quick_bench_reports_every_runner_and_ratio(cql, tmp_path: Path) -> None:
    output = tmp_path / "spark_ingest.json"
    run = run_bench("spark_ingest", "--quick", "--output", str(output))
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads(output.read_text())
    assert {(r["corpus"], r["runner"]) for r in results["runs"]} == {
        (c, m) for c in ("duplicate-heavy", "new-data-heavy") for m in ("single", "local[1]", "local[2]")}
    assert all(r["mbps"] > 0 for r in results["runs"]) and len(results["runs"]) == 8  # single runs twice
    assert results["ratios"]["duplicate-heavy local[2] vs single"]["goal"] == 1.5
    assert "Where the time goes" in run.stdout and "chunk hash" in run.stdout and "spark overhead" in run.stdout
    leftover = [r.id for r in head_rows(cql) if r.id.startswith("bench-spark/")]
    assert leftover == []  # the bench removes its files (their delete markers are the heads)
