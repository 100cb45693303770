"""Every job, benchmark and command prints a usage mistake as one line and exits 2, before any work starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from casstor_ops.errors import EXIT_USAGE
from tests.support import ROOT

JOBS = ["jobs/ingest.py", "jobs/restore.py", "jobs/reclaim.py", "jobs/verify.py", "jobs/dedup_stats.py"]
MODULES = ["bench.store_restore", "bench.spark_ingest", "bench.jobs_scaling", "bench.key_format",
           "bench.chunk_sizes", "bench.spark_tasks", "casstor_ops.cli.experiments", "casstor_ops.cli.main"]


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



def test_the_compression_bench_refuses_none_as_its_compressed_mode(tmp_path) -> None:
    """``--compression none`` would measure none against itself (the second run overwriting the first): one line,
    exit 2, before any corpus or node (an empty ``--source`` makes a run without the check stop at exit 1)."""
    run = subprocess.run([sys.executable, "-m", "bench.compression", "--compression", "none", "--source",
                          str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == EXIT_USAGE and run.stdout == "", run.stderr
    assert len(run.stderr.splitlines()) == 1 and "--compression none" in run.stderr, run.stderr
