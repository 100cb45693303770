"""Every job, benchmark and command prints a usage mistake as one line and exits 2, before any work starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from casstor_ops.errors import EXIT_USAGE
from tests.support import ROOT

JOBS = ["jobs/ingest.py", "jobs/restore.py", "jobs/reclaim.py", "jobs/verify.py", "jobs/dedup_stats.py"]
MODULES = ["bench.store_restore", "bench.spark_ingest", "bench.jobs_scaling", "bench.key_format",
           "bench.chunk_sizes", "casstor_ops.cli.experiments", "casstor_ops.cli.main"]


@pytest.mark.parametrize("command", [[job] for job in JOBS] + [["-m", module] for module in MODULES],
                         ids=JOBS + MODULES)
def test_unknown_flag_is_one_line_and_exit_2(command: list[str]) -> None:
    # Plain python, not spark-submit: a job that built its SparkSession before parsing would
    # print Spark's start-up lines (or hang on the JVM) and fail the one-line check.
    run = subprocess.run([sys.executable, *command, "--bogus"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert run.returncode == EXIT_USAGE, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert "error: unrecognized arguments: --bogus" in lines[0] or "error: the following arguments" in lines[0]
    assert lines[0].endswith("--help')")
