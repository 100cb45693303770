"""python -m bench.spark_tasks's run, one short round: both sessions start, each measured job runs its tasks, and
the ratios come out (the figures themselves are the bench's to report, not this test's to judge)."""

from __future__ import annotations

import re
import subprocess
import sys

from casstor_ops.cluster.paths import project_root


def test_one_round_measures_the_reference_and_the_casstor_tasks() -> None:
    run = subprocess.run([sys.executable, "-m", "bench.spark_tasks", "--tasks", "16", "--rounds", "1"],
                         capture_output=True, text=True, timeout=600, cwd=project_root())
    assert run.returncode == 0, run.stderr[-2000:]
    assert re.search(r"round 1 reference: +[\d.]+ ms a task", run.stdout), run.stdout
    assert re.search(r"round 1 casstor  : +[\d.]+ ms a task", run.stdout), run.stdout
    assert re.search(r"median of 1: wall \d+\.\d{3}, CPU \d+\.\d{3}", run.stdout), run.stdout
