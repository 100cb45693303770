"""Benchmark: ``casstor serve`` PUT and GET of small bodies, in requests/s, against the raw driver.

N distinct 64 KB bodies are PUT to a ``casstor serve`` started for the run,
then GET back (each checked), by C client threads, each with a keep-alive
``http.client`` connection (``wrk`` is not used: it is not installed here,
and a Python client also checks every body it gets). The reference is the
same bytes written to and read from a one-row-per-key table
(:class:`bench.raw_driver.ScratchTable`) by the driver with C requests in
flight, in the same run. Between the two, the same puts and reads through
the Python ``Store`` API in this process (C threads, one writer lease):
what the store's protocol costs (claims, block list, head) apart from HTTP.
Printed: each figure and the ratios HTTP/raw and HTTP/Store.

    .venv/bin/python -m bench.serve [--requests 400] [--concurrency 8] [--size 65536] [--output PATH]

The server, the client threads and the reference share this machine's
cores: on a small machine the ratio includes the client's own cost. Uses
the cluster of the environment (the embedded node by default, started and
stopped again if it is down); the bodies are deleted afterwards (their
blocks stay until a reclaim), and the scratch keyspace is dropped.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

from bench.common import bench_session, publish, wait_for_quiet_nodes
from bench.raw_driver import ScratchTable
from casstor_ops.cli.args import OneLineParser
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.serve.process import ServerProcess
from casstor_ops.store.api import Store
from casstor_ops.store.leases import WriterLease

RESULTS = Path("bench/results/serve.json")


def _run_clients(server: ServerProcess, count: int, concurrency: int,
                 one: Callable[[http.client.HTTPConnection, int], None]) -> float:
    """Seconds for ``concurrency`` threads to call ``one(connection, i)`` for every i < ``count``."""
    next_index = iter(range(count))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def client() -> None:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=120)
        try:
            while True:
                with lock:
                    index = next(next_index, None)
                if index is None or errors:
                    return
                one(connection, index)
        except BaseException as err:  # reported by the main thread
            errors.append(err)
        finally:
            connection.close()

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    if errors:
        raise errors[0]
    return seconds


def _exchange(connection: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None) -> bytes:
    connection.request(method, path, body=body)
    response = connection.getresponse()
    content = response.read()
    if response.status != 200:
        raise CasstorError(f"{method} {path}: HTTP {response.status}: {content[:200]!r}")
    return content


def _store_api_seconds(store: Store, keys: list[str], bodies: list[bytes], concurrency: int) -> tuple[float, float]:
    """Seconds to put every body through the Store API, then to read each back (checked), ``concurrency`` at once."""
    def read(index: int) -> None:
        out = io.BytesIO()
        store.read(store.stat(keys[index]), out)
        if out.getvalue() != bodies[index]:
            raise CasstorError(f"{keys[index]}: the Store API read back other bytes")

    with WriterLease(store.session, "bench") as lease, ThreadPoolExecutor(concurrency) as pool:
        start = time.perf_counter()
        list(pool.map(lambda i: store.put(io.BytesIO(bodies[i]), keys[i], lease=lease), range(len(keys))))
        put_s = time.perf_counter() - start
        start = time.perf_counter()
        list(pool.map(read, range(len(keys))))
        get_s = time.perf_counter() - start
        list(pool.map(lambda key: store.remove(key, lease=lease), keys))
    return put_s, get_s


def measure(requests: int, concurrency: int, size: int, log: Callable[[str], None]) -> dict:
    """Requests/s of HTTP PUT and GET and of the raw driver's writes and reads, and their ratios."""
    bodies = [os.urandom(size) for _ in range(requests)]
    run = uuid.uuid4().hex[:8]
    paths = [f"/{quote(f'bench-serve/{run}/{i}')}" for i in range(requests)]

    def put(connection: http.client.HTTPConnection, i: int) -> None:
        _exchange(connection, "PUT", paths[i], bodies[i])

    def get(connection: http.client.HTTPConnection, i: int) -> None:
        if _exchange(connection, "GET", paths[i]) != bodies[i]:
            raise CasstorError(f"GET {paths[i]}: the body differs from the one PUT")

    def delete(connection: http.client.HTTPConnection, i: int) -> None:
        _exchange(connection, "DELETE", paths[i])

    with bench_session(log) as (session, _, _):
        server = ServerProcess()
        try:
            wait_for_quiet_nodes(session)
            put_s = _run_clients(server, requests, concurrency, put)
            wait_for_quiet_nodes(session)
            get_s = _run_clients(server, requests, concurrency, get)
            _run_clients(server, requests, concurrency, delete)
        finally:
            code, server_log = server.stop()
        if code != 0:
            raise CasstorError(f"casstor serve exited with {code}: {server_log}")
        api_bodies = [os.urandom(size) for _ in range(requests)]  # new content: every put uploads its blocks
        wait_for_quiet_nodes(session)
        api_put_s, api_get_s = _store_api_seconds(Store(session), [f"bench-serve/{run}/api/{i}" for i in
                                                                    range(requests)], api_bodies, concurrency)
        with ScratchTable(session) as scratch:
            keys = [hashlib.blake2b(path.encode(), digest_size=32).digest() for path in paths]
            wait_for_quiet_nodes(session)
            raw_put_s = scratch.write(list(zip(keys, bodies)), concurrency)
            wait_for_quiet_nodes(session)
            raw_get_s = scratch.read(keys, concurrency)
    rates = {name: round(requests / seconds, 1) for name, seconds in
             [("http_put_per_s", put_s), ("http_get_per_s", get_s), ("store_api_put_per_s", api_put_s),
              ("store_api_get_per_s", api_get_s), ("raw_put_per_s", raw_put_s), ("raw_get_per_s", raw_get_s)]}
    return {"requests": requests, "concurrency": concurrency, "size": size, "client": "threads + http.client",
            **rates, "put_ratio": round(rates["http_put_per_s"] / rates["raw_put_per_s"], 3),
            "get_ratio": round(rates["http_get_per_s"] / rates["raw_get_per_s"], 3),
            "put_ratio_to_store_api": round(rates["http_put_per_s"] / rates["store_api_put_per_s"], 3),
            "get_ratio_to_store_api": round(rates["http_get_per_s"] / rates["store_api_get_per_s"], 3)}


def format_report(results: dict) -> str:
    def line(op: str, low: str) -> str:
        return (f"  {op:<4} HTTP {results[f'http_{low}_per_s']:>7.1f}/s  Store API {results[f'store_api_{low}_per_s']:>7.1f}/s"
                f"  raw {results[f'raw_{low}_per_s']:>7.1f}/s   HTTP/raw {results[f'{low}_ratio']:.3f}"
                f"  HTTP/Store API {results[f'{low}_ratio_to_store_api']:.3f}")
    return "\n".join([f"casstor serve vs the Store API and the raw driver: {results['requests']} bodies of "
                      f"{results['size']} bytes, {results['concurrency']} in flight ({results['client']})",
                      line("PUT", "put"), line("GET", "get")])


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m bench.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="bodies PUT, then GET (default 400)")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads / requests in flight (default 8)")
    parser.add_argument("--size", type=int, default=64 * 1024, help="bytes per body (default 65536)")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"results JSON (default {RESULTS})")
    args = parser.parse_args(argv)

    def run() -> int:
        results = measure(args.requests, args.concurrency, args.size, print)
        return publish(results, format_report(results), args.output)

    return run_reporting_errors(run)


if __name__ == "__main__":
    raise SystemExit(main())
