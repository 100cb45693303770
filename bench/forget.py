"""``casstor forget`` over many IDs: 1,000 IDs together against one request at a time, same run.

On a scratch node of its own (:mod:`casstor_ops.lab.scratch_cluster`, RF 1),
each round stores the same history under two prefixes (``rN/one/`` and
``rN/together/``, their batches alternated): ``--ids`` files stored
``--versions`` times (each time new content: 19 in 20 files of 2-6 KiB, one
block each, named by its version row; every 20th of 80 KiB, several blocks
and a block list), then every 10th file removed (a delete marker), as a
backup prefix that was stored again and again. The node is flushed and left
quiet; then each prefix is forgotten as of an hour later (past the grace,
so every version but a live file's newest goes, and a removed file's entry
too), the two in alternate order by round (after a warm-up of both on a prefix of
their own):

* **together**: :func:`~casstor_ops.store.history.forget.forget` as the store
  runs it, :data:`~casstor_ops.store.cql.row_requests.ROWS_AT_ONCE` IDs together;
* **one**: the same with ``at_once=1``, one request after the other: the
  reference, what forget did before it took IDs together.

Then the same history is stored once more for each way (``rN/store-one/``,
``rN/store-together/``) and the whole store is forgotten, without a prefix,
as ``casstor reclaim`` runs it first: a paged scan of ``versions`` (every
file the earlier rounds left too), IDs dropped together or one at a time.

The two ways of each scope must drop the same number of versions and
withdraw the same number of entries. Figures are medians over the rounds,
with the client's and the node's CPU per ID of the history.

Usage::

    .venv/bin/python -m bench.forget                  # 5,000 IDs x 3 versions, 3 rounds
    .venv/bin/python -m bench.forget --quick          # 300 IDs, 1 round: for tests

Results are printed and written as JSON (``bench/results/forget.json``).
Failures print ``casstor: ...`` and exit non-zero; the node is stopped.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

from bench.common import run_and_publish, wait_for_quiet_nodes
from bench.cpu import CpuMeter
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import connect
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError
from casstor_ops.lab.scratch_cluster import scratch_cluster
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.row_requests import ROWS_AT_ONCE
from casstor_ops.store.engine.batch_upload import SmallFile
from casstor_ops.store.history.forget import forget
from casstor_ops.store.schema import Replication, init_store

DEFAULT_OUTPUT = project_root() / "bench" / "results" / "forget.json"
BATCH = 200  # files a put_many, as a tree store's batches
WARM_IDS = 200
LARGE_EVERY, REMOVED_EVERY = 20, 10
WAYS = {"one": 1, "together": ROWS_AT_ONCE}
SCOPES = ("prefix", "store")  # forget PREFIX; forget without one (reclaim's), which scans the store


def _content(rng: random.Random, n: int) -> bytes:
    return rng.randbytes(80 * 1024 if n % LARGE_EVERY == 0 else rng.randrange(2048, 6144))


def _file_id(prefix: str, n: int) -> str:
    return f"{prefix}d{n // 100:03d}/f{n:05d}"


def fill(store: Store, prefixes: list[str], ids: int, versions: int, seed: int) -> None:
    """Store the same history under each of ``prefixes``: ``ids`` files ``versions`` times, then every
    REMOVED_EVERY-th removed."""
    for v in range(versions):
        for first in range(0, ids, BATCH):
            names = range(first, min(first + BATCH, ids))
            for prefix in prefixes:
                rng = random.Random(f"{seed}/{v}/{first}/{prefix}")
                failed = [r for r in store.put_many([SmallFile(_file_id(prefix, n), _content(rng, n)) for n in names])
                          if isinstance(r, Exception)]
                if failed:
                    raise CasstorError(f"filling {prefix}: {failed[0]}")
    for prefix in prefixes:
        store.remove_all([_file_id(prefix, n) for n in range(0, ids, REMOVED_EVERY)])


def timed_forget(store: Store, prefix: str | None, at_once: int, meter: CpuMeter) -> dict:
    """Forget ``prefix`` (None: the whole store) as of an hour from now, ``at_once`` IDs together: seconds, CPU
    seconds, and what it forgot."""
    with meter.measure() as cost:
        started = time.perf_counter()
        report = forget(store.session, store.namespace, prefix, now=time.time() + 3600, at_once=at_once)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "client_cpu_s": cost.client_s, "node_cpu_s": cost.node_s, "ids": report.ids,
            "dropped": len(report.dropped), "withdrawn": len(report.withdrawn)}


def run_benchmark(ids: int, versions: int, rounds: int, log: Callable[[str], None] = print) -> dict:
    results: dict = {"ids": ids, "versions": versions, "rounds": [], "removed_every": REMOVED_EVERY}
    with scratch_cluster(heap_mb=1024, max_nodes=1, log=log) as scratch:
        scratch.grow(1)
        session = connect(scratch.endpoint(), start=False)

        def quiet() -> None:
            for keyspace in (META_KS, DATA_KS):
                scratch.cluster.nodetool("flush", keyspace)
            wait_for_quiet_nodes(session)

        try:
            init_store(session, Replication.simple(1), Replication.simple(1))
            store = Store(session)
            meter = CpuMeter(scratch.node_pids())
            fill(store, [f"warm/{way}/" for way in WAYS], WARM_IDS, versions, seed=-1)
            for way, at_once in WAYS.items():  # statements prepared, the node's code compiled: round 1 alike
                forget(session, store.namespace, f"warm/{way}/", now=time.time() + 3600, at_once=at_once)
            for r in range(rounds):
                order = list(WAYS) if r % 2 == 0 else list(reversed(WAYS))
                measured: dict = {scope: {} for scope in SCOPES}
                prefixes = {way: f"r{r}/{way}/" for way in WAYS}
                log(f"round {r + 1}: storing {ids:,} files x {versions} under {', '.join(prefixes.values())}")
                fill(store, list(prefixes.values()), ids, versions, seed=r)
                quiet()
                for way in order:
                    measured["prefix"][way] = timed_forget(store, prefixes[way], WAYS[way], meter)
                for way in order:  # the same history alone in the store's scan, as reclaim's forget finds it
                    fill(store, [f"r{r}/store-{way}/"], ids, versions, seed=r)
                    quiet()
                    measured["store"][way] = timed_forget(store, None, WAYS[way], meter)
                for scope in SCOPES:
                    log("  " + ", ".join(f"{scope} {way}: {m['seconds']:.2f} s, {m['ids']:,} IDs, {m['dropped']:,} "
                                         f"versions dropped" for way, m in measured[scope].items()))
                _check_same(measured, ids)
                results["rounds"].append(measured)
        finally:
            session.cluster.shutdown()
    results["median_s"] = {scope: {way: statistics.median(m[scope][way]["seconds"] for m in results["rounds"])
                                   for way in WAYS} for scope in SCOPES}
    results["together_of_one"] = {scope: results["median_s"][scope]["together"] / results["median_s"][scope]["one"]
                                  for scope in SCOPES}
    return results


def _check_same(measured: dict, ids: int) -> None:
    """Both ways of each scope dropped and withdrew the same, something; under a prefix, of every ID."""
    for scope, ways in measured.items():
        counts = {way: (m["dropped"], m["withdrawn"]) for way, m in ways.items()}
        if len(set(counts.values())) != 1 or not counts["one"][0] or \
                (scope == "prefix" and {m["ids"] for m in ways.values()} != {ids}):
            raise CasstorError(f"the two forgets of the {scope} differ or missed IDs: {counts}")


def format_report(r: dict) -> str:
    lines = [f"forget of {r['ids']:,} IDs x {r['versions']} versions (every {r['removed_every']}th removed), one "
             f"node, RF 1; medians of {len(r['rounds'])} rounds (shared 2-core machine: noisy)",
             f"  {'scope':>6} {'way':>8} {'seconds':>8} {'IDs/s':>8} {'client CPU ms/ID':>17} {'node CPU ms/ID':>15}"]
    for scope in SCOPES:
        for way in WAYS:
            runs = [m[scope][way] for m in r["rounds"]]
            seconds = r["median_s"][scope][way]
            client = statistics.median(m["client_cpu_s"] for m in runs) * 1000 / r["ids"]
            node = [m["node_cpu_s"] for m in runs if m["node_cpu_s"] is not None]
            node_text = f"{statistics.median(node) * 1000 / r['ids']:.3f}" if node else "n/a"
            lines.append(f"  {scope:>6} {way:>8} {seconds:>8.2f} {r['ids'] / seconds:>8,.0f} {client:>17.3f} "
                         f"{node_text:>15}")
    first = r["rounds"][0]["prefix"]["one"]
    lines.append(f"  together / one at a time: {r['together_of_one']['prefix']:.3f} of the time under a prefix, "
                 f"{r['together_of_one']['store']:.3f} of the store ({first['dropped']:,} versions dropped and "
                 f"{first['withdrawn']:,} entries withdrawn by each)")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m bench.forget", description=__doc__.split("\n")[0])
    parser.add_argument("--ids", type=int, default=5_000, help="files under each prefix (default %(default)s)")
    parser.add_argument("--versions", type=int, default=3, help="times each is stored (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each on fresh prefixes (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="300 IDs, 1 round: for tests")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.quick:
        args.ids, args.rounds = 300, 1
    if min(args.ids, args.versions, args.rounds) < 1:
        parser.error("--ids, --versions and --rounds take 1 or more")

    return run_and_publish(lambda log: run_benchmark(args.ids, args.versions, args.rounds, log=log),
                           format_report, args.output)


if __name__ == "__main__":
    sys.exit(main())
