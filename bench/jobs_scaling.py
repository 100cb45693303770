"""How the Spark maintenance jobs scale: each job's time at 2N blocks as a ratio of its time at N.

The jobs (their library calls, in one SparkSession):

* ``stats``: :func:`casstor_ops.ops.dedup_stats.compute`;
* ``verify``: :func:`casstor_ops.ops.verify.verify` (re-hashes every block);
* ``reclaim plan``: :func:`casstor_ops.ops.reclaim.make_plan` (what ``--dry-run`` runs);
* ``reclaim execute``: :func:`casstor_ops.ops.reclaim.execute` of that plan, in an
  offline reclaim window (its fixed ~2 s wait for the clock-skew bound included).

Each pass gets a fresh synthetic store written with prepared statements
(a window of requests in flight, with retries): N small intact blocks with their index rows,
80% of them named by files of 8 blocks (each with its version row and directory entry), 20% garbage
for reclaim to delete.
A warm-up pass (untimed; ``--quick`` skips it) runs every job once
first, so JIT and Python worker start-up are not charged to N; each
scale runs ``--repeat`` passes and counts each job's fastest (the
machine's other load only adds time). Each job starts on quiet nodes
(:func:`bench.common.wait_for_quiet_nodes`): the compaction of the
data just written belongs to the set-up, not to the job. Goal: time(2N)/time(N) <= 2.2 for
every job (linear, with the fixed costs of a Spark job counted at N too).

Usage::

    .venv/bin/python -m bench.jobs_scaling                 # N = 20,000
    .venv/bin/python -m bench.jobs_scaling --blocks 100000
    .venv/bin/python -m bench.jobs_scaling --quick         # N = 500, for tests

The store is the environment's and must be empty: the bench writes and
truncates its tables (use a separate ``CASSTOR_HOME``). Results are printed
and written as JSON (``bench/results/jobs_scaling.json``). Failures print
``casstor: ...`` and exit non-zero.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from cassandra.cluster import Session

from bench.common import bench_session, publish, wait_for_quiet_nodes
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.ops.dedup_stats import compute
from casstor_ops.ops.reclaim import execute, make_plan
from casstor_ops.ops.verify import verify
from casstor_ops.spark.session import spark_session
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.coordination.reclaim_window import ReclaimWindow, WindowMode
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.request_queue import RequestQueue
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.commit import version_row
from casstor_ops.store.engine.inline import head_columns
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.records import FileInfo
from casstor_ops.store.schema import require_settings

DEFAULT_OUTPUT = project_root() / "bench" / "results" / "jobs_scaling.json"
DEFAULT_BLOCKS = 20_000
QUICK_BLOCKS = 500
BLOCK_BYTES = 256
BLOCKS_PER_FILE = 8
GARBAGE_SHARE = 0.2
WRITES_IN_FLIGHT = 64
GOAL = 2.2
JOBS = ("stats", "verify", "reclaim plan", "reclaim execute")
_TABLES = [(DATA_KS, "blocks"), (DATA_KS, "existing_blocks"), (META_KS, "versions"), (META_KS, "dir_entries"),
           (META_KS, "directories"), (META_KS, "file_blocks")]


def require_empty(session: Session) -> None:
    for ks, table in _TABLES:
        if session.execute(f"SELECT * FROM {ks}.{table} LIMIT 1").one() is not None:
            raise CasstorError(f"{ks}.{table} is not empty: the bench writes and truncates the store's tables; "
                               f"run it on an empty store (e.g. CASSTOR_HOME=/tmp/bench-home)")


def wipe(session: Session) -> None:
    for ks, table in _TABLES:
        session.execute(f"TRUNCATE {ks}.{table}")


def write_store(session: Session, blocks: int) -> None:
    """``blocks`` intact blocks and index rows; all but GARBAGE_SHARE of them in files of BLOCKS_PER_FILE."""
    st = Statements.for_session(session)
    contents = [os.urandom(BLOCK_BYTES) for _ in range(blocks)]
    keys = [block_hash(c) for c in contents]

    def run(statement, rows) -> None:
        window = RequestQueue(session, WRITES_IN_FLIGHT)  # retries timeouts: the machine is shared
        for params in rows:
            while window.in_flight >= window.max_requests:
                window.poll()
            window.submit(statement, params, lambda _: None)
        window.drain()

    run(st.insert_block, [(k, BLOCK_BYTES, None, c) for k, c in zip(keys, contents)])
    run(st.insert_existing, [(k, BLOCK_BYTES, BLOCK_BYTES) for k in keys])
    referenced = keys[:int(blocks * (1 - GARBAGE_SHARE))]
    files = [referenced[i:i + BLOCKS_PER_FILE] for i in range(0, len(referenced), BLOCKS_PER_FILE)]
    versions = [uuid.uuid1() for _ in files]
    run(st.insert_file_block, [(f"bench-jobs/{n:07}", versions[n], i * BLOCK_BYTES, k, BLOCK_BYTES)
                               for n, file in enumerate(files) for i, k in enumerate(file)])
    rows = [version_row(f"bench-jobs/{n:07}", versions[n], len(file) * BLOCK_BYTES, file_hash(file), len(file), None,
                        head_columns(None, False)) for n, file in enumerate(files)]
    run(st.insert_version, rows)
    # A namespace of its own: the one cached for the session remembers directories an earlier pass's wipe removed.
    namespace = Namespace(session, require_settings(session).directory_rows)
    with ThreadPoolExecutor(WRITES_IN_FLIGHT // 4) as pool:
        list(pool.map(namespace.publish, [FileInfo(*row[:6]) for row in rows]))


def time_jobs(spark, session: Session, blocks: int) -> dict[str, float]:
    """Seconds per job on a fresh store of ``blocks`` blocks; checks that each job saw what was written."""
    times: dict[str, float] = {}

    def timed(name: str, job: Callable[[], object]) -> object:
        wait_for_quiet_nodes(session)  # the compaction of the data just written is the bench's set-up, not the job
        started = time.perf_counter()
        result = job()
        times[name] = time.perf_counter() - started
        return result

    wipe(session)
    write_store(session, blocks)
    report = timed("stats", lambda: compute(spark))
    checked = timed("verify", lambda: verify(spark))
    with ReclaimWindow(session, WindowMode.OFFLINE) as window:  # no writer runs: the bench wrote the store
        plan = timed("reclaim plan", lambda: make_plan(spark, session))
        done = timed("reclaim execute", lambda: execute(spark, session, plan, window.hold))
    garbage = blocks - int(blocks * (1 - GARBAGE_SHARE))
    if (report.totals["unique_blocks"], checked.blocks_checked, checked.exit_code, done.deleted.blocks) != \
            (blocks, blocks, 0, garbage):
        raise CasstorError(f"bench data not seen as written: stats {report.totals['unique_blocks']}, verify "
                           f"{checked.blocks_checked} (exit {checked.exit_code}), reclaim deleted "
                           f"{done.deleted.blocks} of {garbage} garbage blocks")
    return times


def run_benchmark(blocks: int, master: str, repeat: int = 2, warm_up: bool = True,
                  log: Callable[[str], None] = print) -> dict:
    with bench_session(log) as (session, _endpoint, _started):
        require_empty(session)
        spark = spark_session("casstor-bench-jobs", master=master, conf={"spark.ui.enabled": "false"})
        try:
            if warm_up:
                log(f"warm-up at {QUICK_BLOCKS:,} blocks (untimed)")
                time_jobs(spark, session, QUICK_BLOCKS)
            passes: dict[int, list[dict[str, float]]] = {}
            for i in range(repeat):  # alternate the scales: load that drifts hits both alike
                for n in (blocks, 2 * blocks):
                    log(f"{n:,} blocks, pass {i + 1} of {repeat}")
                    passes.setdefault(n, []).append(time_jobs(spark, session, n))
        finally:
            spark.stop()
            wipe(session)
    # The fastest pass of each job: the machine's other load only ever adds time.
    base, double = ({job: min(p[job] for p in passes[n]) for job in JOBS} for n in (blocks, 2 * blocks))
    return {"blocks": blocks, "master": master, "goal": GOAL, "repeat": repeat, "passes": passes,
            "jobs": {job: {"seconds_n": base[job], "seconds_2n": double[job], "ratio": double[job] / base[job]}
                     for job in JOBS}}


def format_report(results: dict) -> str:
    n = results["blocks"]
    lines = [f"Spark jobs at N = {n:,} and 2N = {2 * n:,} blocks ({results['master']}, fastest of "
             f"{results['repeat']} pass(es)); "
             f"goal time(2N)/time(N) <= {results['goal']}",
             f"  {'job':18} {'time(N) s':>10} {'time(2N) s':>11} {'ratio 2N/N':>11}"]
    for job, r in results["jobs"].items():
        verdict = "ok" if r["ratio"] <= results["goal"] else "ABOVE GOAL"
        lines.append(f"  {job:18} {r['seconds_n']:>10.1f} {r['seconds_2n']:>11.1f} {r['ratio']:>11.2f}  {verdict}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m bench.jobs_scaling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS, help="N (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help=f"N = {QUICK_BLOCKS}, one pass, no warm-up, for tests")
    parser.add_argument("--repeat", type=int, default=2, help="passes per scale, fastest counts (default 2)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default %(default)s)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    blocks = QUICK_BLOCKS if args.quick else args.blocks

    def bench() -> int:
        if blocks < BLOCKS_PER_FILE * 10 or args.repeat < 1:
            raise CasstorError(f"--blocks {blocks} / --repeat {args.repeat}: use at least {BLOCKS_PER_FILE * 10} "
                               f"blocks and one pass")
        results = run_benchmark(blocks, args.master, repeat=1 if args.quick else args.repeat, warm_up=not args.quick,
                                log=lambda msg: print(msg, file=sys.stderr, flush=True))
        return publish(results, format_report(results), args.output)

    return run_reporting_errors(bench)


if __name__ == "__main__":
    sys.exit(main())
