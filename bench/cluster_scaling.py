"""Spark ingest and restore of one tree on 1 and on 3 local nodes (RF 1, RF 3): MB/s, write amplification, CPU/MB.

For each node count N the bench starts a fresh cluster of its own
(:mod:`casstor_ops.lab.scratch_cluster`: its own home and free ports, never
the user's node), initialises a store with RF = N on both keyspaces, and
with a SparkSession (``local[2]`` unless ``--master``) on that cluster:

* ingests the tree (:func:`casstor_ops.spark.bulk_ingest.ingest`): MB/s of
  file bytes (10^6 bytes/s), and CPU milliseconds per MB of the client
  (this process, Spark's JVM and Python workers) and of the nodes;
* restores it (:func:`casstor_ops.spark.bulk_restore.restore_many`) and
  compares every restored file with its source, byte for byte;
* flushes every node (``nodetool flush``) and divides the live SSTable
  bytes of both keyspaces by the store's stored bytes (block content after
  compression): the write amplification of the replication factor, the
  index, the block lists and Cassandra's own overhead.

Every node of one machine shares its cores with Spark, so the 3-node
figures show correctness and what RF 3 costs (disk, CPU per MB), not a
speed-up: the report says so. Ratios are 3 nodes against 1 node, measured
in the same run on the same tree.

Usage::

    .venv/bin/python -m bench.cluster_scaling            # ~240 MB tree (5 versions x 4 x 8 MiB + 64 MiB new)
    .venv/bin/python -m bench.cluster_scaling --quick    # ~11 MB, for tests
    .venv/bin/python -m bench.cluster_scaling --work /tmp/cs   # keep the tree and the restores there

Results are printed and written as JSON (``bench/results/cluster_scaling.json``).
Failures print ``casstor: ...`` and exit non-zero; a restore that differs
from its source is such a failure; every node the bench started is stopped.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from bench.common import MB, MIB, live_bytes, run_and_publish, wait_for_quiet_nodes
from bench.cpu import CpuMeter
from bench.spark_ingest import BenchConfig
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import connect
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError
from casstor_ops.lab import corpus
from casstor_ops.lab.scratch_cluster import ScratchCluster, scratch_cluster
from casstor_ops.spark.bulk_ingest import ingest
from casstor_ops.spark.bulk_report import totals
from casstor_ops.spark.bulk_restore import restore_many
from casstor_ops.spark.session import spark_session
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import Replication, init_store

DEFAULT_OUTPUT = project_root() / "bench" / "results" / "cluster_scaling.json"
NODE_COUNTS = (1, 3)
HEAP_MB = 768
PREFIX = "scaling/"


FULL = BenchConfig(new_bytes=64 * MIB, new_files=8)  # bench.spark_ingest's corpus shapes, in one tree


def write_tree(root: Path, config: BenchConfig) -> list[Path]:
    """The bench's tree: every version of an edited tree (duplicate-heavy) and fresh random files."""
    corpus.write_versioned_tree(root / "versions", config.tree_versions, config.tree_files, config.tree_file_bytes,
                                seed=7)
    corpus.write_new_data(root / "new", config.new_bytes, config.new_files, seed=7)
    return corpus.tree_files(root)


def different_files(source: Path, restored: Path, files: list[Path]) -> list[str]:
    """Relative paths of ``files`` whose copy under ``restored`` is missing or differs byte for byte."""
    return [str(p.relative_to(source)) for p in files
            if not (restored / p.relative_to(source)).is_file()
            or not filecmp.cmp(p, restored / p.relative_to(source), shallow=False)]


def _figures(nbytes: int, seconds: float, cost) -> dict:
    return {"seconds": seconds, "mbps": nbytes / MB / seconds, **cost.per_mb(nbytes)}


def _measure(scratch: ScratchCluster, nodes: int, source: Path, files: list[Path], work: Path, master: str,
             log: Callable[[str], None]) -> dict:
    """Ingest, restore and disk figures of the tree on the scratch cluster grown to ``nodes``."""
    scratch.grow(nodes)
    endpoint = scratch.endpoint()
    session = connect(endpoint, start=False)
    spark = None
    try:
        init_store(session, Replication.simple(nodes), Replication.simple(nodes))
        spark = spark_session(f"casstor-bench-cluster-{nodes}", master=master, endpoint=endpoint,
                              conf={"spark.ui.enabled": "false"})
        nbytes = sum(p.stat().st_size for p in files)
        meter = CpuMeter(scratch.node_pids(), whole_tree=True)
        results = {}
        for step in ("ingest", "restore"):
            wait_for_quiet_nodes(session)  # the previous step's compactions are not this step's cost
            started = time.perf_counter()
            with meter.measure() as cost:
                if step == "ingest":
                    rows = ingest(spark, str(source), prefix=PREFIX, endpoint=endpoint)
                else:
                    rows = restore_many(spark, PREFIX, work / f"restored-{nodes}", endpoint=endpoint)
                done = totals(rows)
            results[step] = _figures(nbytes, time.perf_counter() - started, cost)
            if done["failed"] or done["files"] != len(files):
                raise CasstorError(f"{step} on {nodes} node(s): {done['failed']} of {done['files']} files failed")
            log(f"{nodes} node(s): {step} {results[step]['mbps']:.1f} MB/s")
        differ = different_files(source, work / f"restored-{nodes}" / PREFIX.rstrip("/"), files)
        if differ:
            raise CasstorError(f"restore on {nodes} node(s) differs from the source: {', '.join(differ[:5])}")
        stored = Store(session).stats().stored_bytes
        disk = {ks: live_bytes(scratch.cluster, ks) for ks in (DATA_KS, META_KS)}
    finally:
        if spark is not None:
            spark.stop()
        session.cluster.shutdown()
    return {"nodes": nodes, "rf": nodes, "file_bytes": nbytes, "files": len(files), "byte_exact": True,
            **results, "stored_bytes": stored, "disk_bytes": disk,
            "write_amplification": sum(disk.values()) / stored, "data_amplification": disk[DATA_KS] / stored}


def run_benchmark(config: BenchConfig, master: str = "local[2]", work: Path | None = None,
                  log: Callable[[str], None] = print) -> dict:
    with tempfile.TemporaryDirectory(prefix="casstor-bench-scaling-") as tmp:
        work = Path(work or tmp).absolute()
        source = work / "source"
        files = write_tree(source, config)
        runs = []
        for nodes in NODE_COUNTS:  # a fresh cluster each: the disk figures are this tree's alone
            with scratch_cluster(heap_mb=HEAP_MB, max_nodes=nodes, log=log) as scratch:
                runs.append(_measure(scratch, nodes, source, files, work, master, log))
    base, top = runs[0], runs[-1]
    ratios = {f"{step} MB/s": top[step]["mbps"] / base[step]["mbps"] for step in ("ingest", "restore")}
    for step in ("ingest", "restore"):
        for side in ("client", "node"):
            ratios[f"{step} {side} CPU/MB"] = top[step][f"{side}_ms_per_mb"] / base[step][f"{side}_ms_per_mb"]
    ratios["write amplification"] = top["write_amplification"] / base["write_amplification"]
    return {"config": asdict(config), "master": master, "cpus": os.cpu_count(), "mb_bytes": MB, "runs": runs,
            "ratios_top_vs_one_node": ratios}


def format_report(results: dict) -> str:
    runs = results["runs"]
    lines = [f"Spark ingest and restore of one tree ({runs[0]['files']} files, {runs[0]['file_bytes'] / MB:.1f} MB) "
             f"on 1 and {runs[-1]['nodes']} local nodes, {results['master']}; MB = 10^6 bytes",
             f"  {'nodes':>5} {'RF':>3} {'ingest MB/s':>12} {'restore MB/s':>13} {'ingest CPU ms/MB':>22} "
             f"{'restore CPU ms/MB':>22} {'disk/stored':>12} {'data disk/stored':>17}"]
    for r in runs:
        cpu = {s: f"{r[s]['client_ms_per_mb']:.0f} + {r[s]['node_ms_per_mb']:.0f} node" for s in ("ingest", "restore")}
        lines.append(f"  {r['nodes']:>5} {r['rf']:>3} {r['ingest']['mbps']:>12.1f} {r['restore']['mbps']:>13.1f} "
                     f"{cpu['ingest']:>22} {cpu['restore']:>22} {r['write_amplification']:>12.2f} "
                     f"{r['data_amplification']:>17.2f}")
    lines.append(f"  every restore byte-exact: {all(r['byte_exact'] for r in runs)}")
    lines.append(f"Ratios, {runs[-1]['nodes']} nodes vs 1 node (same run, same tree):")
    lines += [f"  {name:<26} {value:6.2f}x" for name, value in results["ratios_top_vs_one_node"].items()]
    lines.append(f"All nodes and Spark share this machine's {results['cpus']} cores: these figures prove correctness "
                 f"and the cost growth of RF {runs[-1]['rf']} (disk and CPU per MB), not a speed-up from more nodes.")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m bench.cluster_scaling", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tree of ~11 MB (tests, smoke runs)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default %(default)s)")
    parser.add_argument("--work", type=Path, help="keep the tree and the restores in this directory")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    config = BenchConfig.quick() if args.quick else FULL
    return run_and_publish(lambda log: run_benchmark(config, args.master, args.work, log=log), format_report,
                           args.output)


if __name__ == "__main__":
    sys.exit(main())
