"""python -m bench.jobs_scaling --quick times every job at N and 2N blocks and prints positive ratios."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.jobs_scaling", *args], capture_output=True, text=True,
                          timeout=900, cwd=ROOT, env=dict(os.environ))


@pytest.mark.slow  # eight Spark jobs: about 4 minutes on 2 cores; make test-all runs it
def test_quick_bench_prints_a_ratio_per_job(empty_store, tmp_path: Path) -> None:
    output = tmp_path / "jobs_scaling.json"
    run = bench("--quick", "--output", str(output))
    assert run.returncode == 0, run.stdout + run.stderr
    printed = dict(re.findall(r"^  (stats|verify|reclaim plan|reclaim execute)\s+[\d.]+\s+[\d.]+\s+([\d.]+)",
                              run.stdout, re.M))
    assert set(printed) == {"stats", "verify", "reclaim plan", "reclaim execute"}
    assert all(float(ratio) > 0 for ratio in printed.values())
    results = json.loads(output.read_text())
    assert results["blocks"] == 500 and results["goal"] == 2.2
    assert all(r["seconds_n"] > 0 and r["seconds_2n"] > 0 for r in results["jobs"].values())
    assert empty_store.execute("SELECT * FROM casstor_data.existing_blocks LIMIT 1").one() is None  # wiped


def test_refuses_a_store_with_data(empty_store, tmp_path: Path) -> None:
    empty_store.execute(empty_store.prepare("INSERT INTO casstor_data.existing_blocks (hash, size) VALUES (?, ?)"),
                        (bytes(32), 1))
    run = bench("--quick", "--output", str(tmp_path / "x.json"))
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("casstor: casstor_data.existing_blocks is not empty")
