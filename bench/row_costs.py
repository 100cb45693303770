"""Bytes on disk and bloom-filter memory per row of each store table, measured on a node of its own.

The method behind the sizing table of ``docs/operations.md``: start one
scratch node (:mod:`casstor_ops.lab.scratch_cluster`, RF 1, never the
user's node), write N blocks with ``bench.jobs_scaling.write_store`` (the
store's prepared statements: N ``blocks`` rows of 256-byte random content,
N ``existing_blocks`` rows, the ``file_blocks`` rows of files of 8 blocks
naming 80% of them, one ``versions`` row and one ``dir_entries`` entry per
file, and one entry marking their directory), ``nodetool flush``, wait
for compactions, then divide each table's live SSTable bytes
(``nodetool tablestats``, "Space used (live)") and its bloom filter's
off-heap bytes by its row count. A ``blocks`` row costs its content as
stored plus the overhead printed here (content minus the 256 bytes).

Usage::

    .venv/bin/python -m bench.row_costs                 # N = 200,000
    .venv/bin/python -m bench.row_costs --quick         # N = 5,000, for tests

Results are printed and written as JSON (``bench/results/row_costs.json``).
Failures print ``casstor: ...`` and exit non-zero; the node is stopped.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable

from bench.common import run_and_publish, wait_for_quiet_nodes
from bench.jobs_scaling import BLOCK_BYTES, BLOCKS_PER_FILE, GARBAGE_SHARE, write_store
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import connect
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError
from casstor_ops.lab.scratch_cluster import scratch_cluster
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import Replication, init_store

DEFAULT_OUTPUT = project_root() / "bench" / "results" / "row_costs.json"
DEFAULT_BLOCKS = 200_000
QUICK_BLOCKS = 5_000
TABLES = ((DATA_KS, "blocks"), (DATA_KS, "existing_blocks"), (META_KS, "file_blocks"), (META_KS, "versions"),
          (META_KS, "dir_entries"))


def row_counts(blocks: int) -> dict[str, int]:
    """Rows ``write_store(session, blocks)`` writes to each table."""
    referenced = int(blocks * (1 - GARBAGE_SHARE))
    files = -(-referenced // BLOCKS_PER_FILE)
    return {"blocks": blocks, "existing_blocks": blocks, "file_blocks": referenced, "versions": files,
            "dir_entries": files + 1}  # and the marker of their directory, in the root's


def table_bytes(cluster: LocalCluster, keyspace: str, table: str) -> dict[str, int]:
    """Live SSTable bytes and bloom filter off-heap bytes of one table on node 1, memtable flushed first."""
    cluster.nodetool("flush", keyspace, table)
    out = cluster.nodetool("tablestats", f"{keyspace}.{table}")

    def figure(label: str) -> int:
        found = re.search(rf"^\s*{label}:\s*(\d+)\s*$", out, re.MULTILINE)
        if not found:
            raise CasstorError(f"nodetool tablestats {keyspace}.{table}: no '{label}' line")
        return int(found.group(1))

    return {"disk_bytes": figure(r"Space used \(live\)"),
            "bloom_bytes": figure(r"Bloom filter off heap memory used")}


def run_benchmark(blocks: int, log: Callable[[str], None] = print) -> dict:
    if blocks < BLOCKS_PER_FILE * 10:
        raise CasstorError(f"--blocks {blocks}: use at least {BLOCKS_PER_FILE * 10}")
    counts = row_counts(blocks)
    with scratch_cluster(heap_mb=768, max_nodes=1, log=log) as scratch:
        scratch.grow(1)
        session = connect(scratch.endpoint(), start=False)
        try:
            init_store(session, Replication.simple(1), Replication.simple(1))
            log(f"writing {blocks:,} blocks and their index, block-list and head rows")
            write_store(session, blocks)
            for keyspace in (DATA_KS, META_KS):
                scratch.cluster.nodetool("flush", keyspace)
            wait_for_quiet_nodes(session)  # per-row figures of compacted tables, as a running store has
            measured = {table: table_bytes(scratch.cluster, ks, table) for ks, table in TABLES}
        finally:
            session.cluster.shutdown()
    tables = {table: {"rows": counts[table], **figures, "disk_bytes_per_row": figures["disk_bytes"] / counts[table],
                      "bloom_bytes_per_row": figures["bloom_bytes"] / counts[table]}
              for table, figures in measured.items()}
    tables["blocks"]["overhead_bytes_per_row"] = tables["blocks"]["disk_bytes_per_row"] - BLOCK_BYTES
    return {"blocks": blocks, "content_bytes": BLOCK_BYTES, "blocks_per_file": BLOCKS_PER_FILE, "tables": tables}


def format_report(results: dict) -> str:
    lines = [f"Bytes per row after flush and compaction, one node, RF 1 ({results['blocks']:,} blocks of "
             f"{results['content_bytes']} random bytes; files of {results['blocks_per_file']} blocks)",
             f"  {'table':<16} {'rows':>9} {'disk bytes':>12} {'bytes/row':>10} {'bloom bytes/row':>16}"]
    for table, t in results["tables"].items():
        lines.append(f"  {table:<16} {t['rows']:>9,} {t['disk_bytes']:>12,} {t['disk_bytes_per_row']:>10.1f} "
                     f"{t['bloom_bytes_per_row']:>16.2f}")
    lines.append(f"  a blocks row costs its stored content plus {results['tables']['blocks']['overhead_bytes_per_row']:.1f}"
                 f" bytes; multiply every figure by the replication factor for the cluster's total")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m bench.row_costs", description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS, help="N (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help=f"N = {QUICK_BLOCKS}, for tests")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    blocks = QUICK_BLOCKS if args.quick else args.blocks
    return run_and_publish(lambda log: run_benchmark(blocks, log=log), format_report, args.output)


if __name__ == "__main__":
    sys.exit(main())
