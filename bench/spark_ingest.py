"""Spark bulk ingest vs a single-process store loop, on the same corpus shapes, in one run.

Three ways to store the same kind of corpus, each a figure in MB/s
(10^6 bytes) and a ratio against the first:

* ``single``: ``Store.put`` of every file in a loop, in this process;
* ``local[1]`` and ``local[2]``: :func:`casstor_ops.spark.bulk_ingest.ingest`
  with one and two executor cores (the Spark session and its Python
  workers are started and connected and Spark SQL initialised first,
  untimed, as the single-process store's session is: a job's start-up is
  reported on its own line).

on two corpora (:mod:`casstor_ops.lab.corpus`): *duplicate-heavy* (every
version of an edited tree: most blocks repeat) and *new-data-heavy*
(random bytes). Each run gets its own fresh seed, so no run finds blocks
an earlier run stored. The single-process runs go first and again last
(the load of a shared machine drifts); the ratios use the better of the
two. Goal: ``local[2]`` >= 1.5 x ``single`` on the duplicate-heavy corpus.

Where the time goes, measured in the same run:

* ``chunk+hash``: one core reading, chunking and hashing the corpus, no
  Cassandra (the CPU floor of a duplicate store);
* ``cassandra+driver`` = single-process store time - chunk+hash;
* ``listing``: the driver's listing and bin-packing (the only driver work);
* ``spark overhead`` = job wall time - (sum of per-file store seconds /
  executor cores): scheduling, task (de)serialisation, leases, result
  collection;
* ``node cpu``: CPU seconds the embedded Cassandra node spent during each
  run (``/proc``), when the node is local.

Usage::

    .venv/bin/python -m bench.spark_ingest            # ~160 MB tree + 96 MiB new data per run
    .venv/bin/python -m bench.spark_ingest --quick    # tiny sizes, for tests

The store is the environment's (like ``bench.store_restore``); the
bench's files go under ``bench-spark/<run>/`` and are removed at the end
(blocks stay until a reclaim). Results are printed and written as JSON
(``bench/results/spark_ingest.json``). Failures print ``casstor: ...`` and
exit non-zero.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from bench.common import MB, MIB, bench_session, chunk_hash_seconds, publish
from casstor_ops.lab import corpus
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import Endpoint
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.spark.executor_store import store_for
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.paths import project_root
from casstor_ops.store.schema import read_settings
from casstor_ops.store.trees.source_listing import list_source
from casstor_ops.spark.bulk_ingest import ingest
from casstor_ops.spark.bulk_tasks import TASKS_PER_CORE, pack_by_size
from casstor_ops.spark.session import spark_session

DEFAULT_OUTPUT = project_root() / "bench" / "results" / "spark_ingest.json"
MASTERS = ("local[1]", "local[2]")
GOAL = 1.5


@dataclass(frozen=True)
class BenchConfig:
    tree_versions: int = 5
    tree_files: int = 4
    tree_file_bytes: int = 8 * MIB
    new_bytes: int = 96 * MIB
    new_files: int = 24

    @classmethod
    def quick(cls) -> "BenchConfig":
        return cls(tree_versions=3, tree_files=2, tree_file_bytes=1 * MIB, new_bytes=4 * MIB, new_files=4)


def _write_corpus(kind: str, directory: Path, config: BenchConfig, seed: int) -> list[Path]:
    if kind == "duplicate-heavy":
        corpus.write_versioned_tree(directory, config.tree_versions, config.tree_files, config.tree_file_bytes, seed)
    else:
        corpus.write_new_data(directory, config.new_bytes, config.new_files, seed)
    return corpus.tree_files(directory)


def _node_cpu_s(endpoint: Endpoint) -> float | None:
    """CPU seconds (user + system) of the embedded node so far; None for a remote cluster."""
    if not endpoint.embedded:
        return None
    pid = LocalCluster().node(1).pid()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Bench:
    def __init__(self, config: BenchConfig, endpoint: Endpoint, work: Path, log: Callable[[str], None]) -> None:
        self.config, self.endpoint, self.work, self.log = config, endpoint, work, log
        self.store = store_for(endpoint)
        self.seed = time.time_ns() % (1 << 62)
        self.prefix = f"bench-spark/{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{self.seed % 10**6:06d}/"
        self.runs: list[dict] = []
        self.phases: dict[str, dict] = {}

    @contextlib.contextmanager
    def corpus(self, kind: str, runner: str):
        """A fresh corpus for one run (its own seed: nothing of it is in the store yet)."""
        self.seed += 1
        directory = self.work / f"{kind}-{runner.replace('[', '').replace(']', '')}"
        paths = _write_corpus(kind, directory, self.config, self.seed)
        try:
            yield directory, paths
        finally:
            shutil.rmtree(directory)

    def record(self, kind: str, runner: str, nbytes: int, seconds: float, cpu_before: float | None,
               **extra: float) -> None:
        cpu_after = _node_cpu_s(self.endpoint)
        run = dict(corpus=kind, runner=runner, bytes=nbytes, seconds=seconds, mbps=nbytes / MB / seconds,
                   node_cpu_s=None if cpu_before is None else cpu_after - cpu_before, **extra)
        self.runs.append(run)
        self.log(f"{kind:<16} {runner:<9} {run['mbps']:8.1f} MB/s  ({nbytes / MB:.1f} MB in {seconds:.2f} s"
                 + (f", node CPU {run['node_cpu_s']:.1f} s" if run["node_cpu_s"] is not None else "")
                 + "".join(f", {k} {v:.2f} s" for k, v in extra.items()) + ")")

    def single(self, kind: str) -> None:
        settings = read_settings(self.store.session)
        with self.corpus(kind, "single") as (directory, paths):
            nbytes = sum(p.stat().st_size for p in paths)
            hashing = chunk_hash_seconds(paths, settings)  # also warms the page cache like the other runs
            cpu = _node_cpu_s(self.endpoint)
            start = time.perf_counter()
            for path in paths:
                self.store.put(path, f"{self.prefix}single/{kind}/{path.relative_to(directory).as_posix()}")
            seconds = time.perf_counter() - start
            self.record(kind, "single", nbytes, seconds, cpu, chunk_hash_s=hashing,
                        cassandra_driver_s=max(0.0, seconds - hashing))

    def spark(self, spark, master: str, kind: str, cores: int) -> None:
        with self.corpus(kind, master) as (directory, paths):
            nbytes = sum(p.stat().st_size for p in paths)
            chunk_hash_seconds(paths, read_settings(self.store.session))  # same page cache state as 'single'
            started = time.perf_counter()
            files = list_source(directory)
            pack_by_size(files, TASKS_PER_CORE * cores, size=lambda f: f.size)
            listing = time.perf_counter() - started
            cpu = _node_cpu_s(self.endpoint)
            start = time.perf_counter()
            results = ingest(spark, directory, prefix=f"{self.prefix}{master}/{kind}/", endpoint=self.endpoint)
            seconds = time.perf_counter() - start
            rows = results.collect()
            failed = [r for r in rows if r.status != "stored"]
            if failed:
                raise CasstorError(f"bench ingest: {failed[0].id}: {failed[0].status} {failed[0].error}")
            busy = sum(r.seconds for r in rows) / cores
            self.record(kind, master, nbytes, seconds, cpu, listing_s=listing,
                        spark_overhead_s=max(0.0, seconds - busy))

    def start_spark(self, master: str, cores: int):
        """A session with its Python workers started and connected (untimed, reported)."""
        start = time.perf_counter()
        spark = spark_session(f"casstor-bench-{master}", master=master, endpoint=self.endpoint,
                              conf={"spark.ui.enabled": "false"})
        endpoint = self.endpoint

        def connect_worker(_):
            store_for(endpoint)
            time.sleep(0.5)  # keep the slot busy so every core gets its own worker
            yield 1

        spark.sparkContext.parallelize(range(cores), cores).mapPartitions(connect_worker).collect()
        # The first DataFrame of a session initialises Spark SQL (~10 s here): a one-off, like the connects.
        spark.createDataFrame([(1,)], "x int").collect()
        self.log(f"spark {master}: session, Spark SQL and {cores} connected worker(s) in "
                 f"{time.perf_counter() - start:.1f} s (not in the figures)")
        return spark

    def cleanup(self) -> None:
        for info in list(self.store.list(self.prefix)):
            with contextlib.suppress(CasstorError):
                self.store.remove(info.id)


def _ratios(runs: list[dict]) -> dict[str, dict]:
    by: dict[tuple[str, str], float] = {}
    for r in runs:  # the best of repeated runs
        by[r["corpus"], r["runner"]] = max(r["mbps"], by.get((r["corpus"], r["runner"]), 0.0))
    out = {}
    for kind in ("duplicate-heavy", "new-data-heavy"):
        for master in MASTERS:
            out[f"{kind} {master} vs single"] = dict(value=by[kind, master] / by[kind, "single"],
                                                     goal=GOAL if (kind, master) == ("duplicate-heavy", "local[2]")
                                                     else None)
    return out


def run_benchmark(config: BenchConfig, log: Callable[[str], None] = print) -> dict:
    kinds = ("duplicate-heavy", "new-data-heavy")
    with bench_session(log) as (_, endpoint, started), tempfile.TemporaryDirectory(prefix="casstor-bench-") as tmp:
        bench = _Bench(config, endpoint, Path(tmp), log)
        try:
            for kind in kinds:
                bench.single(kind)
            for master in MASTERS:
                cores = int(master[len("local["):-1])
                spark = bench.start_spark(master, cores)
                try:
                    for kind in kinds:
                        bench.spark(spark, master, kind, cores)
                finally:
                    spark.stop()
            for kind in kinds:  # again: machine load drifts, and the reference is the better of the two
                bench.single(kind)
        finally:
            bench.cleanup()
        return dict(schema=1, run=dict(started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                       cpus=os.cpu_count(), endpoint=endpoint.description, started_node=started,
                                       prefix=bench.prefix, mb_bytes=MB),
                    config=asdict(config), runs=bench.runs, ratios=_ratios(bench.runs))


def format_report(results: dict) -> str:
    lines = ["", "Spark bulk ingest vs single-process store (MB/s = 10^6 bytes/s; ratios vs single, same corpus)"]
    for run in results["runs"]:
        lines.append(f"  {run['corpus']:<16} {run['runner']:<9} {run['mbps']:8.1f} MB/s")
    for name, ratio in results["ratios"].items():
        goal = ratio["goal"]
        verdict = "" if goal is None else f"   goal >= {goal:.1f}: {'met' if ratio['value'] >= goal else 'NOT met'}"
        lines.append(f"  {name:<36} {ratio['value']:6.2f}x{verdict}")
    lines.append("Where the time goes (seconds):")
    for run in results["runs"]:
        parts = {k: v for k, v in run.items() if k.endswith("_s") and v is not None}
        lines.append(f"  {run['corpus']:<16} {run['runner']:<9} total {run['seconds']:.2f}: "
                     + ", ".join(f"{k[:-2].replace('_', ' ')} {v:.2f}" for k, v in parts.items()))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m bench.spark_ingest", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny corpora (tests, smoke runs)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def bench() -> int:
        results = run_benchmark(BenchConfig.quick() if args.quick else BenchConfig(),
                                log=lambda msg: print(msg, flush=True))
        return publish(results, format_report(results), args.output)

    return run_reporting_errors(bench)


if __name__ == "__main__":
    sys.exit(main())
