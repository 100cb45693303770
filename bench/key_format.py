"""Benchmark: block hashes as 32-byte blobs vs 64-character hex text.

Writes the same N existence-index rows into two scratch tables (``hash
blob`` and ``hash text``), then runs the store's existence check (``IN``
batches of 100 distinct keys) against each, flushes, and compares on-disk
size. Prints each figure and the ratio text/blob, measured in the same run.

    .venv/bin/python -m bench.key_format [--rows 100000]

Uses the cluster of the environment (the embedded local node by default)
and drops its scratch keyspace at the end.
"""

from __future__ import annotations

import hashlib
import os
import time

from cassandra.concurrent import execute_concurrent_with_args

from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import connect
from casstor_ops.cluster.launcher import LocalCluster

from bench.common import live_bytes

KS = "casstor_bench_keys"


def _keys(n: int) -> list[bytes]:
    return [hashlib.blake2b(i.to_bytes(8, "little"), digest_size=32).digest() for i in range(n)]


def main() -> None:
    parser = OneLineParser(prog="python -m bench.key_format", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    session = connect()
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.idx_blob (hash blob PRIMARY KEY, size int)")
    session.execute(f"CREATE TABLE IF NOT EXISTS {KS}.idx_text (hash text PRIMARY KEY, size int)")
    session.cluster.control_connection.wait_for_schema_agreement()
    keys = _keys(args.rows)
    variants = {"blob": keys, "text": [k.hex() for k in keys]}
    figures: dict[str, dict[str, float]] = {}
    for name, values in variants.items():
        insert = session.prepare(f"INSERT INTO {KS}.idx_{name} (hash, size) VALUES (?, ?)")
        start = time.perf_counter()
        execute_concurrent_with_args(session, insert, [(v, 49152) for v in values], concurrency=64)
        write_s = time.perf_counter() - start
        select = session.prepare(f"SELECT hash FROM {KS}.idx_{name} WHERE hash IN ? LIMIT 100")
        batches = [(values[i:i + 100],) for i in range(0, len(values), 100)]
        start = time.perf_counter()
        found = sum(len(list(r.result_or_exc)) for r in
                    execute_concurrent_with_args(session, select, batches, concurrency=16))
        check_s = time.perf_counter() - start
        assert found == len(values), f"{name}: {found} of {len(values)} keys found"
        figures[name] = {"writes_per_s": len(values) / write_s, "checks_per_s": len(values) / check_s}
    if not os.environ.get("CASSTOR_NODES"):
        cluster = LocalCluster()
        for name in variants:
            figures[name]["disk_bytes"] = live_bytes(cluster, f"{KS}.idx_{name}")
    session.execute(f"DROP KEYSPACE {KS}")
    session.cluster.shutdown()
    print(f"{args.rows} index rows, existence checks in IN batches of 100")
    for metric in figures["blob"]:
        blob, text = figures["blob"][metric], figures["text"][metric]
        print(f"  {metric:<13} blob {blob:>14,.0f}   text {text:>14,.0f}   text/blob {text / blob:.2f}")


if __name__ == "__main__":
    main()
