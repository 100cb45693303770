"""What a Spark task costs casstor's Python workers: PySpark's own per-task cost against a casstor task's.

PySpark's worker invalidates the import caches before every task, and on Python 3.11 that reads pyspark.zip,
py4j's zip and spark-core's jar again (:mod:`casstor_ops.spark.worker_imports`). A worker that has imported
casstor no longer does. Each round starts two fresh ``local[2]`` SparkSessions in turn: in the *reference*
one the tasks are PySpark's alone (a no-op function: what every task paid before), in the *casstor* one each
task imports casstor first. Both run ``--tasks`` tasks after a warm-up job, so the Python workers exist; the
figure is the casstor task's wall time and CPU (this process and its descendants: the JVM and the workers)
against the reference's, as ratios, the median of ``--rounds``. No Cassandra.

Example::

    $ .venv/bin/python -m bench.spark_tasks --tasks 400 --rounds 3

Failures: a bad flag is one line (exit 2); a Spark that does not start ends with its error.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from casstor_ops.cli.args import OneLineParser, positive_int
from casstor_ops.errors import run_reporting_errors

from bench.cpu import tree_s

WARMUP_TASKS = 8


# Lambdas: cloudpickle sends them by value, so a reference task's worker never imports this module (which
# imports casstor).
_REFERENCE: Callable[[int], int] = lambda item: item  # noqa: E731
_CASSTOR: Callable[[int], int] = lambda item: importlib.import_module("casstor_ops") and item  # noqa: E731


@dataclass(frozen=True)
class Run:
    """One measured job: its wall seconds and the CPU seconds of this process and its descendants."""

    wall_s: float
    cpu_s: float


def _measure(task: Callable[[int], int], tasks: int) -> Run:
    """``tasks`` one-item tasks of ``task`` on a fresh local[2] SparkSession."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").appName("bench-spark-tasks") \
        .config("spark.ui.enabled", "false").getOrCreate()
    try:
        context = spark.sparkContext
        context.parallelize(range(WARMUP_TASKS), WARMUP_TASKS).map(task).count()
        started, cpu = time.monotonic(), tree_s()
        context.parallelize(range(tasks), tasks).map(task).count()
        return Run(time.monotonic() - started, tree_s() - cpu)
    finally:
        spark.stop()


def run_benchmark(tasks: int, rounds: int, log: Callable[[str], None] = print) -> dict:
    """Alternated rounds of the reference and the casstor tasks; each one's ms a task, and the median ratios."""
    runs: dict[str, list[Run]] = {"reference": [], "casstor": []}
    for number in range(1, rounds + 1):
        for name, task in (("reference", _REFERENCE), ("casstor", _CASSTOR)):
            run = _measure(task, tasks)
            runs[name].append(run)
            log(f"round {number} {name:9}: {1000 * run.wall_s / tasks:6.1f} ms a task, "
                f"{1000 * run.cpu_s / tasks:6.1f} ms CPU")
    pairs = list(zip(runs["reference"], runs["casstor"]))
    return {"tasks": tasks, "rounds": rounds, "runs": runs,
            "wall_ratio": statistics.median(c.wall_s / r.wall_s for r, c in pairs),
            "cpu_ratio": statistics.median(c.cpu_s / r.cpu_s for r, c in pairs)}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m bench.spark_tasks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=positive_int, default=400, help="tasks a measured job (default 400)")
    parser.add_argument("--rounds", type=positive_int, default=3, help="alternated rounds (default 3)")
    args = parser.parse_args(argv)
    results = run_benchmark(args.tasks, args.rounds)
    print(f"casstor task / PySpark's own task, median of {args.rounds}: wall {results['wall_ratio']:.3f}, "
          f"CPU {results['cpu_ratio']:.3f} (lower is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(run_reporting_errors(main))
