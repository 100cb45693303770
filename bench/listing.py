"""Listing a directory against the store's size: the directory index (schema 5) against a full scan, same run.

On a scratch node of its own (:mod:`casstor_ops.lab.scratch_cluster`, RF 1),
the bench writes heads directly (no content: listing reads none), with the
store's prepared statements: a ``versions`` row per file and its
``dir_entries`` row, in directories of 100 files (``s/00042/f007``, each
directory's entries one single-partition batch, as a batch of heads in one
directory is written), a subdirectory marker per directory in ``s/``, and
its ``directories`` row. Then, at each store size (100,000 files, then
1,000,000: the same store grown), it times ``ls s/00042/`` two ways:

* **index**: :func:`~casstor_ops.store.namespace.listing.directory_entries`,
  what ``casstor ls`` reads (the directory's partition only);
* **scan**: every ``versions`` row read and filtered by prefix, as schema 4's
  ``catalog.list_files`` scanned ``files`` (the reference, measured in the
  same run).

Figures are medians of several runs (the scan: fewer at 1M, it takes
seconds), with the client's and the node's CPU per listing. Then a **flat
directory** (no ``/`` under it, a bucket-like prefix) is filled through
:class:`~casstor_ops.store.namespace.entries.Namespace` (the writers' own
split logic) with ``--flat`` entries at a bound of ``--flat-rows`` entries
a partition, listed page by page, and every ``(dir, bucket)`` partition
counted against the bound. The default (400,000 entries at 4,000 a
partition: ~100+ partitions) has the shape of 10 million at the store's
default 100,000; the report extrapolates the partition size in bytes.

Usage::

    .venv/bin/python -m bench.listing                  # 100k and 1M files, flat 400k at 4k
    .venv/bin/python -m bench.listing --quick          # 10k and 30k, flat 20k at 500: for tests

Results are printed and written as JSON (``bench/results/listing.json``).
Failures print ``casstor: ...`` and exit non-zero; the node is stopped.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.query import BatchStatement, BatchType
from cassandra.util import uuid_from_time

from bench.common import run_and_publish, wait_for_quiet_nodes
from bench.cpu import CpuMeter
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import connect
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError
from casstor_ops.lab.scratch_cluster import scratch_cluster
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.namespace.entries import Namespace, entry_row, version_micros
from casstor_ops.store.namespace.layout import buckets, directory_key
from casstor_ops.store.namespace.listing import directory_entries, recorded_generation
from casstor_ops.store.records import FileInfo
from casstor_ops.store.schema import Replication, init_store

DEFAULT_OUTPUT = project_root() / "bench" / "results" / "listing.json"
PER_DIRECTORY = 100
LISTED = "s/00042/"
INDEX_RUNS, SCAN_RUNS = 15, 3
CONCURRENCY = 64
FLAT_IN_FLIGHT = 128
TARGET_MS, TARGET_RATIO = 50.0, 1.5


def _info(file_id: str, when: float) -> FileInfo:
    return FileInfo(file_id, uuid_from_time(when), 1000, bytes(32), 1, datetime.fromtimestamp(when, timezone.utc))


def write_directories(session: Session, first: int, count: int) -> float:
    """Directories ``first .. first+count-1`` of ``s/``, 100 files each (versions, entries, marker, directory row);
    the heads written a second."""
    st = Statements.for_session(session)
    started, now = time.perf_counter(), time.time() - 1e7  # versions in the past: none collides with the flat part's
    versions, batches = [], []
    for d in range(first, first + count):
        directory = f"s/{d:05d}/"
        batch = BatchStatement(BatchType.UNLOGGED)  # one partition: the directory's bucket 0
        for i in range(PER_DIRECTORY):
            info = _info(f"{directory}f{i:03d}", now + (d * PER_DIRECTORY + i) / 1000)
            micros = version_micros(info.version)
            versions.append((info.id, info.version, info.size, info.hash, info.blocks, info.committed_at, None, None,
                             None, None, None, None, None, False, micros))
            batch.add(st.insert_entry, (directory_key(directory), 0, f"f{i:03d}", *entry_row(info, None, False),
                                        micros))
        batches.append((batch, ()))
    markers = [(directory_key(""), 0, "s/")] + [(directory_key("s/"), 0, f"{d:05d}/")
                                                 for d in range(first, first + count)]
    made = [(directory_key(""),), (directory_key("s/"),)] + [(directory_key(f"s/{d:05d}/"),)
                                                              for d in range(first, first + count)]
    for statement, rows in ((st.insert_version, versions), (st.insert_marker, markers), (st.make_directory, made)):
        execute_concurrent_with_args(session, statement, rows, concurrency=CONCURRENCY, raise_on_first_error=True)
    execute_concurrent(session, batches, concurrency=CONCURRENCY // 4, raise_on_first_error=True)
    return len(versions) / (time.perf_counter() - started)


def list_by_index(session: Session, st: Statements) -> list[str]:
    return [e.name for e in directory_entries(session, st, LISTED)]


def list_by_scan(session: Session, st: Statements) -> list[str]:
    """Every version row read, those under the prefix kept (schema 4's list_files, over ``files``)."""
    bound = st.all_versions.bind(())
    bound.fetch_size = 5000
    return sorted(r.id[len(LISTED):] for r in session.execute(bound, execution_profile=st.named_rows)
                  if r.id.startswith(LISTED))


def timed(listing: Callable[[], list[str]], runs: int, meter: CpuMeter) -> dict:
    """Median wall ms of ``runs`` listings (each must find the directory's 100 names), and CPU ms per listing."""
    seconds = []
    with meter.measure() as cost:
        for _ in range(runs):
            started = time.perf_counter()
            names = listing()
            seconds.append(time.perf_counter() - started)
            if len(names) != PER_DIRECTORY:
                raise CasstorError(f"listed {len(names)} names of {LISTED}, expected {PER_DIRECTORY}")
    return {"median_ms": 1000 * statistics.median(seconds), "min_ms": 1000 * min(seconds),
            "max_ms": 1000 * max(seconds), "runs": runs, "client_cpu_ms": 1000 * cost.client_s / runs,
            "node_cpu_ms": None if cost.node_s is None else 1000 * cost.node_s / runs}


def fill_flat(session: Session, entries: int, rows: int) -> float:
    """``entries`` files in the flat directory ``flat/`` through the writers' namespace (splits and all) at a
    bound of ``rows``; the entries written a second."""
    namespace = Namespace(session, rows)  # not the session's cached one: its own bound
    in_flight = threading.BoundedSemaphore(FLAT_IN_FLIGHT)
    errors: list[Exception] = []

    def done(error: Exception | None) -> None:
        if error is not None:
            errors.append(error)
        in_flight.release()

    started, now = time.perf_counter(), time.time() - 1e6
    for i in range(entries):
        in_flight.acquire()
        if errors:
            raise errors[0]
        namespace.publish_async(_info(f"flat/{uuid.UUID(int=i * 0x9E3779B97F4A7C15 % (1 << 128)).hex}",
                                      now + i / 1000), None, done)
    for _ in range(FLAT_IN_FLIGHT):
        in_flight.acquire()
    if errors:
        raise errors[0]
    return entries / (time.perf_counter() - started)


def check_flat(session: Session, st: Statements, entries: int, rows: int) -> dict:
    """The flat directory listed page by page (names in order, each once) and its partitions counted."""
    started, pages, names, start = time.perf_counter(), 0, [], ""
    while True:
        page = [e.name for _, e in zip(range(PAGE), directory_entries(session, st, "flat/", start, page=PAGE))]
        if page and page[0] == start:
            page = page[1:]
        if not page:
            break
        pages, start = pages + 1, page[-1]
        names += page
    seconds = time.perf_counter() - started
    listed, distinct = len(names), len(set(names))
    generation = recorded_generation(session, st, "flat/") or 0
    sizes = [session.execute(st.bucket_rows, (directory_key("flat/"), b)).one()[0] for b in buckets(generation)]
    return {"entries": entries, "listed": listed, "distinct": distinct, "in_order": names == sorted(names), "bound": rows, "generation": generation, "partitions": len(sizes),
            "largest_partition": max(sizes), "smallest_partition": min(sizes), "pages": pages,
            "list_s": seconds, "over_bound": max(sizes) / rows}


PAGE = 1000


def run_benchmark(sizes: list[int], flat: int, flat_rows: int, log: Callable[[str], None] = print) -> dict:
    results: dict = {"per_directory": PER_DIRECTORY, "listed": LISTED, "stores": []}
    with scratch_cluster(heap_mb=1024, max_nodes=1, log=log) as scratch:
        scratch.grow(1)
        session = connect(scratch.endpoint(), start=False)
        try:
            init_store(session, Replication.simple(1), Replication.simple(1))
            st = Statements.for_session(session)
            meter = CpuMeter(scratch.node_pids())
            written = 0
            for files in sizes:
                log(f"writing heads up to {files:,} files")
                rate = write_directories(session, written // PER_DIRECTORY, (files - written) // PER_DIRECTORY)
                written = files
                log(f"  {rate:,.0f} heads a second (versions row + entry); flushing, waiting for compactions")
                scratch.cluster.nodetool("flush", META_KS)
                wait_for_quiet_nodes(session)
                list_by_index(session, st)  # warm: prepared, caches
                index = timed(lambda: list_by_index(session, st), INDEX_RUNS, meter)
                scan = timed(lambda: list_by_scan(session, st), SCAN_RUNS if files <= 200_000 else 1, meter)
                results["stores"].append({"files": files, "write_heads_per_s": rate, "index": index, "scan": scan})
                log(f"  index {index['median_ms']:.1f} ms, scan {scan['median_ms']:.0f} ms")
            log(f"filling flat/ with {flat:,} entries at {flat_rows:,} a partition")
            flat_rate = fill_flat(session, flat, flat_rows)
            scratch.cluster.nodetool("flush", META_KS)
            results["flat"] = {**check_flat(session, st, flat, flat_rows), "write_entries_per_s": flat_rate}
        finally:
            session.cluster.shutdown()
    first, last = results["stores"][0], results["stores"][-1]
    results["index_growth"] = last["index"]["median_ms"] / first["index"]["median_ms"]
    results["targets_met"] = results["index_growth"] <= TARGET_RATIO and last["index"]["median_ms"] < TARGET_MS
    return results


ENTRY_BYTES = 120  # a dir_entries row on disk, about (docs/schema.md)


def format_report(r: dict) -> str:
    lines = [f"ls of a {r['per_directory']}-entry directory ({r['listed']}), one node, RF 1, medians "
             f"(shared 2-core machine: noisy)",
             f"  {'files':>10} {'index ms':>9} {'cpu c/n ms':>11} {'scan ms':>9} {'cpu c/n ms':>11} "
             f"{'scan/index':>10} {'heads/s':>8}"]
    for s in r["stores"]:
        i, c = s["index"], s["scan"]
        lines.append(f"  {s['files']:>10,} {i['median_ms']:>9.1f} {i['client_cpu_ms']:>5.1f}/{i['node_cpu_ms'] or 0:<5.1f}"
                     f" {c['median_ms']:>9.0f} {c['client_cpu_ms']:>5.0f}/{c['node_cpu_ms'] or 0:<5.0f}"
                     f" {c['median_ms'] / i['median_ms']:>10.0f} {s['write_heads_per_s']:>8,.0f}")
    lines.append(f"  index listing, largest store / smallest: {r['index_growth']:.2f}x (target <= {TARGET_RATIO}x, "
                 f"under {TARGET_MS:.0f} ms): {'met' if r['targets_met'] else 'NOT met'}")
    f = r["flat"]
    scale = 100_000 / f["bound"]
    lines += [f"flat directory: {f['entries']:,} entries at a bound of {f['bound']:,} ({f['write_entries_per_s']:,.0f}"
              f" entries/s written through the namespace)",
              f"  generation {f['generation']}, {f['partitions']} partitions, largest {f['largest_partition']:,} rows "
              f"({f['over_bound']:.3f}x the bound), smallest {f['smallest_partition']:,}; listed in {f['pages']} "
              f"pages of {PAGE} in {f['list_s']:.1f} s: {f['listed']:,} names listed, {f['distinct']:,} distinct, "
              f"{'in' if f['in_order'] else 'NOT in'} name order",
              f"  scaled to 10,000,000 entries at the default 100,000: the same shape x{scale:.0f} entries, ~"
              f"{f['partitions']} partitions of at most ~{f['over_bound'] * 100_000 * ENTRY_BYTES / 1e6:.0f} MB"]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m bench.listing", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda t: [int(v) for v in t.split(",")], default=[100_000, 1_000_000],
                        help="store sizes in files, growing (default 100000,1000000)")
    parser.add_argument("--flat", type=int, default=400_000, help="entries of the flat directory (default %(default)s)")
    parser.add_argument("--flat-rows", type=int, default=4_000, help="its bound a partition (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="10k and 30k files, flat 20k at 500: for tests")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.sizes, args.flat, args.flat_rows = [10_000, 30_000], 20_000, 500

    return run_and_publish(lambda log: run_benchmark(args.sizes, args.flat, args.flat_rows, log=log),
                           format_report, args.output)


if __name__ == "__main__":
    sys.exit(main())
