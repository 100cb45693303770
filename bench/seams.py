"""A multipart Complete that cuts its seams again, against one that keeps the parts' cuts, same run.

On a scratch node of its own (RF 1), each round stores ``--parts`` parts of
``--part-mb`` MiB of random bytes twice, as UploadPart stores them (files of
their own, in blocks), and completes each on quiet nodes
(:func:`~casstor_ops.store.engine.multipart.commit_parts`), the two ways in
alternate order by round:

* **cut**: the seams cut again, as a Complete does (``SEAMS_BUDGET_S``);
* **kept**: ``seams_budget_s=0``, the parts' block lists end to end: the
  reference, what a Complete did before it cut seams.

Then the same bytes are stored again in parts of ``--other-part-mb`` MiB and
completed each way: the blocks of that second object its first one (same way)
lacks are what re-uploading with another part size adds to the store for as
long as the object is kept (the parts' own blocks go with the parts). Figures
are medians over the rounds: the Complete's seconds, ms a seam and CPU, and
cut/kept.

Usage::

    .venv/bin/python -m bench.seams                 # 100 parts of 5 MiB, again in 8 MiB, 3 rounds
    .venv/bin/python -m bench.seams --quick         # 8 parts, 1 round: for tests

Results are printed and written as JSON (``bench/results/seams.json``).
Failures print ``casstor: ...`` and exit non-zero; the node is stopped.
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

from cassandra.cluster import Session

from bench.common import run_and_publish, wait_for_quiet_nodes
from bench.cpu import CpuMeter
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import connect
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError
from casstor_ops.lab.scratch_cluster import scratch_cluster
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.block_list import read
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import catalog
from casstor_ops.store.engine.multipart import SEAMS_BUDGET_S, UPLOADS, commit_parts
from casstor_ops.store.records import FileInfo
from casstor_ops.store.schema import Replication, init_store

DEFAULT_OUTPUT = project_root() / "bench" / "results" / "seams.json"
WAYS = {"cut": SEAMS_BUDGET_S, "kept": 0.0}
MiB = 1024 * 1024


def store_parts(store: Store, upload: str, data: bytes, part_size: int) -> list[FileInfo]:
    """``data`` stored as the parts of ``upload`` (each a file in blocks, as UploadPart stores it); their heads."""
    st = Statements.for_session(store.session)
    heads = []
    for number, start in enumerate(range(0, len(data), part_size), 1):
        part = f"{UPLOADS}bench/{upload}/{number:05d}"
        store.put(io.BytesIO(data[start:start + part_size]), part, lease=False, inline=False)
        heads.append(catalog.head(store.session, st, part))
    return heads


def timed_complete(store: Store, parts: list[FileInfo], file_id: str, budget_s: float, meter: CpuMeter) -> dict:
    """Complete ``parts`` as ``file_id`` with seams cut for ``budget_s``: seconds, CPU seconds, and the object."""
    with meter.measure() as cost:
        started = time.perf_counter()
        head = commit_parts(store.session, store.settings, parts, file_id, seams_budget_s=budget_s)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "ms_a_seam": seconds * 1000 / max(1, len(parts) - 1), "client_cpu_s": cost.client_s,
            "node_cpu_s": cost.node_s, "blocks": head.blocks, "file_hash": head.hash.hex()}


def _blocks(session: Session, file_id: str) -> dict[bytes, int]:
    st = Statements.for_session(session)
    return {digest: size for _, digest, size in read(session, st, catalog.head(session, st, file_id))}


def run_benchmark(parts: int, part_mb: int, other_part_mb: int, rounds: int,
                  log: Callable[[str], None] = print) -> dict:
    results: dict = {"parts": parts, "part_mb": part_mb, "other_part_mb": other_part_mb, "rounds": []}
    with scratch_cluster(heap_mb=1024, max_nodes=1, log=log) as scratch:
        scratch.grow(1)
        session = connect(scratch.endpoint(), start=False)

        def quiet() -> None:
            for keyspace in (META_KS, DATA_KS):
                scratch.cluster.nodetool("flush", keyspace)
            wait_for_quiet_nodes(session)

        try:
            init_store(session, Replication.simple(1), Replication.simple(1))
            store, meter = Store(session), CpuMeter(scratch.node_pids())
            for r in range(rounds):
                rng = random.Random(r)
                data = b"".join(rng.randbytes(part_mb * MiB) for _ in range(parts))
                order = list(WAYS) if r % 2 == 0 else list(reversed(WAYS))
                measured: dict = {}
                for way in order:
                    log(f"round {r + 1}: {parts} parts of {part_mb} MiB, seams {way}")
                    heads = store_parts(store, f"r{r}-{way}", data, part_mb * MiB)
                    quiet()
                    measured[way] = timed_complete(store, heads, f"r{r}/{way}", WAYS[way], meter)
                    again = store_parts(store, f"r{r}-{way}-again", data, other_part_mb * MiB)
                    commit_parts(session, store.settings, again, f"r{r}/{way}-again", seams_budget_s=WAYS[way])
                    first, second = _blocks(session, f"r{r}/{way}"), _blocks(session, f"r{r}/{way}-again")
                    added = {digest: size for digest, size in second.items() if digest not in first}
                    measured[way].update(again_blocks=len(added), again_bytes=sum(added.values()))
                    log(f"  Complete {measured[way]['seconds']:.2f} s; again in {other_part_mb} MiB parts: "
                        f"{len(added)} blocks the first object lacks")
                if measured["cut"]["file_hash"] == measured["kept"]["file_hash"] and parts > 1:
                    raise CasstorError("the seams cut again left the object's block list as the parts cut it")
                results["rounds"].append(measured)
        finally:
            session.cluster.shutdown()
    results["median"] = {way: {k: statistics.median(m[way][k] for m in results["rounds"])
                               for k in ("seconds", "ms_a_seam", "again_blocks", "again_bytes")} for way in WAYS}
    results["cut_of_kept"] = results["median"]["cut"]["seconds"] / results["median"]["kept"]["seconds"]
    return results


def format_report(r: dict) -> str:
    size = r["parts"] * r["part_mb"]
    lines = [f"Complete of {r['parts']} parts of {r['part_mb']} MiB ({size} MiB, random bytes), one node, RF 1; "
             f"medians of {len(r['rounds'])} rounds (shared 2-core machine: noisy)",
             f"  {'seams':>6} {'seconds':>8} {'ms/seam':>8} {'client CPU s':>13} {'node CPU s':>11} "
             f"{'again in ' + str(r['other_part_mb']) + ' MiB parts: new blocks (MB)':>40}"]
    for way in WAYS:
        runs = [m[way] for m in r["rounds"]]
        median = r["median"][way]
        client = statistics.median(m["client_cpu_s"] for m in runs)
        node = [m["node_cpu_s"] for m in runs if m["node_cpu_s"] is not None]
        node_text = f"{statistics.median(node):.2f}" if node else "n/a"
        lines.append(f"  {way:>6} {median['seconds']:>8.2f} {median['ms_a_seam']:>8.2f} {client:>13.2f} "
                     f"{node_text:>11} {median['again_blocks']:>31.0f} ({median['again_bytes'] / 1e6:.1f})")
    lines.append(f"  cut / kept: {r['cut_of_kept']:.2f} of the Complete's time; re-uploaded in other parts, the object "
                 f"adds {r['median']['cut']['again_blocks']:.0f} blocks cut against "
                 f"{r['median']['kept']['again_blocks']:.0f} kept")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m bench.seams", description=__doc__.split("\n")[0])
    parser.add_argument("--parts", type=int, default=100, help="parts an upload (default %(default)s)")
    parser.add_argument("--part-mb", type=int, default=5, help="MiB a part (default %(default)s)")
    parser.add_argument("--other-part-mb", type=int, default=8, help="MiB a part, uploaded again (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="8 parts, 1 round: for tests")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.quick:
        args.parts, args.rounds = 8, 1
    if min(args.parts, args.part_mb, args.other_part_mb, args.rounds) < 1 or args.part_mb == args.other_part_mb:
        parser.error("--parts, --part-mb, --other-part-mb and --rounds take 1 or more, the two part sizes differ")
    return run_and_publish(lambda log: run_benchmark(args.parts, args.part_mb, args.other_part_mb, args.rounds,
                                                     log=log), format_report, args.output)


if __name__ == "__main__":
    sys.exit(main())
