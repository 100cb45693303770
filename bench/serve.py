"""Benchmark: ``casstor serve`` under ``wrk``, PUT and GET at several body sizes, against the raw driver.

For each body size (default 4 KB, 64 KB, 1 MB) and number of connections
(default 20), in one run, on the environment's cluster, after ``--warmup``
seconds of PUTs that are not measured (a freshly started node compiles its
hot code during its first seconds of load):

1. **PUT rounds**: each round runs ``wrk -t 1 -c C -d S`` with
   ``bench/wrk/put.lua`` (distinct bodies, every block new, to new keys)
   against a ``casstor serve`` started for the run; with ``--s3`` the same
   through ``casstor serve --s3``, every request a presigned (SigV4) URL
   (``bench/serve_s3.py``); then the **raw reference**: as many bodies of the
   same size, so the same bytes, written to a one-row-per-key table (each its
   own key; their content drawn from ``RAW_MAX_BYTES`` of random bodies held
   in memory) by the Python driver, C requests in flight
   (:class:`bench.raw_driver.ScratchTable`, through the store's request
   queue, which waits out libev's ``ConnectionBusy`` at 20 x 1 MB in flight
   where the driver's ``execute_concurrent`` fails), no HTTP. First come
   *settling rounds* (``--settle``, at most ``SweepConfig.settle``) until
   the node's JIT compiler took under :data:`bench.cpu.SETTLED_SHARE` of its
   CPU in one round, as in ``bench.small_files``: a user's node is a
   long-running server. Then ``--rounds`` measured rounds (default 3); each
   PUT figure is its median round's, the rate of every round beside it, and
   the ratios HTTP/raw and S3/plain are of those medians;
2. **GET**: the same with ``get.lua``: random keys of the set the measured
   PUTs committed, twice: the first run finds the server's content cache
   empty, the second (*GET again*) finds what the first read; the cache's
   hits and misses of each are read from ``/metrics``; with ``--s3``, once
   through the S3 server; then the raw reference's reads of random keys of
   its measured rounds, as many as the GETs did (at most ``RAW_MAX_READS``).

With ``--s3``, ``--multipart-mb 1024`` adds a 1 GiB multipart upload by boto3
against ``casstor store`` of a tree of as many bytes; ``--checksum-mb 64``,
uploads of 64 MiB with each checksum boto3 offers against its default CRC32;
``--complete-parts 1000``, the Complete of an upload of 1,000 parts;
``--delete-keys 2000``, ListObjectVersions then DeleteObjects of 2,000 keys,
1,000 a page and a request; ``--list-uploads 1000``, ListMultipartUploads of
1,000 uploads under way.

Printed: req/s, MB/s, p50/p99 latency, the ratios HTTP/raw (and S3/plain), and beside them
the CPU milliseconds per MB of the server (with its workers), of wrk, of the
driver client, and of the local node (:mod:`bench.cpu`): on a 2-core machine
they all share, a ratio is bounded by the CPU each side needs per byte. Also
checked: the second PUT of the same 1 MB body under another key uploads no
block (``new_bytes == 0``).

    .venv/bin/python -m bench.serve [--sizes 4096 65536 1048576] [--connections 20] [--seconds 30] [--warmup 20]
                                    [--settle 6] [--rounds 3]
                                    [--workers N] [--access-log] [--cache-mb MIB] [--no-raw] [--smoke]
                                    [--s3 [--multipart-mb MIB] [--checksum-mb MIB] [--complete-parts N]
                                          [--delete-keys N] [--list-uploads N]]
                                    [--output PATH]

The store is the environment's as it was made: one made with ``casstor init
--inline-max 65536`` keeps the 4 and 64 KiB bodies inline (one write a PUT,
one read a GET; ``docs/schema.md``), and the report's first line says which.

``--workers``, ``--access-log`` and ``--cache-mb`` are passed to the server
(to measure what they cost or bring). The bench's keys are removed at the end (their
blocks stay until a reclaim) and the scratch keyspace is dropped.

Failures: a wrk run with failed requests (wrk counts status codes; GET
bodies are not compared), a server that does not start or exits
non-zero: one ``casstor:`` line, exit 1.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import random
import re
import statistics
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from functools import partial
from itertools import count
from pathlib import Path
from urllib.parse import quote

from bench.common import MB, bench_session, publish, wait_for_quiet_nodes
from bench.cpu import SETTLED_SHARE, Cost, CpuMeter, compiler_share, process_tree, settle
from bench.raw_driver import ScratchTable
from bench.serve_report import OPERATIONS, size_label
from bench.serve_s3 import S3Face
from bench.wrk import WrkRun, run_wrk
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.serve.process import ServerProcess
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.leases import WriterLease

RESULTS = Path("bench/results/serve.json")
KB = 1024
# The raw writes are as many as the PUTs, so they write as long and as much as HTTP did (flushes and compactions
# included): a capped burst that fits in the node's memtables measured the node at its best (until 2026-11-25, the
# writes were capped at 5,000 bodies and these 200 MB: ~1 s at 64 KiB against 10 s of PUTs).
RAW_MAX_BYTES = 200 * MB  # distinct random bodies held in memory; the writes cycle through them
RAW_MAX_READS = 50_000
DEDUP_BYTES = 1024 * 1024
MAX_ROUNDS = 16  # of --settle and --rounds


@dataclass(frozen=True)
class SweepConfig:
    """What to measure: body sizes x connection counts, seconds per wrk run, the server's options."""

    sizes: tuple[int, ...] = (4 * KB, 64 * KB, 1024 * KB)
    connections: tuple[int, ...] = (20,)
    seconds: float = 30.0
    # An unmeasured PUT run first: the first measured run on a freshly started node paid its JIT compiling
    # (node CPU per MB 17 against 10 for the runs after it; HTTP/raw 0.39 against 0.51-0.60), which the raw
    # reference, measured later on the warm node, never does.
    warmup_seconds: float = 20.0
    # Then rounds of the three PUT runs (plain, S3, raw) until the node's JIT compiler took under
    # bench.cpu.SETTLED_SHARE of its CPU in one, at most `settle`: after the 20 s warm-up alone it still took 29-33 %
    # of the node's CPU over the next round (two runs, 2026-12-07), and 40-44 % in plain PUTs 15-45 s into a node's
    # load (a script of ours), so the one PUT run measured then paid for compiling that the raw reference, measured
    # later, did not. Then `rounds` measured rounds; each figure is the median round's. With --multipart-mb, pairs
    # of (multipart, tree store) settle so too: in the first pairs after the 64 KiB runs the compiler took 5.6-11.4
    # of the node's 17-27 ms a MB of the multipart upload (the parts' and seams' paths), 0.8-3.6 of the tree
    # store's 9-13.
    settle: int = 6
    rounds: int = 3
    raw: bool = True
    workers: int = 1
    access_log: bool = False
    cache_mb: int | None = None  # None: the server's default
    s3: bool = False  # also through `casstor serve --s3` (bench/serve_s3.py)
    multipart_bytes: int = 0  # with s3: a multipart upload of this many bytes against a tree store of as many
    checksum_bytes: int = 0  # with s3: uploads of this many bytes with each checksum boto3 offers
    complete_parts: int = 0  # with s3: the Complete of an upload of this many parts
    delete_keys: int = 0  # with s3: DeleteObjects of this many keys
    list_uploads: int = 0  # with s3: ListMultipartUploads of this many uploads under way

    @classmethod
    def smoke(cls, **overrides: object) -> "SweepConfig":
        """A run of well under a minute: two sizes, 4 connections, 2 s a run."""
        return replace(cls(sizes=(4 * KB, 64 * KB), connections=(4,), seconds=2.0, warmup_seconds=1.0, settle=0,
                           rounds=1), **overrides)

    def server_args(self) -> list[str]:
        return ["--workers", str(self.workers), "--metrics-port", "0", *(["--access-log"] if self.access_log else []),
                *([] if self.cache_mb is None else ["--cache-mb", str(self.cache_mb)])]


GETS = ("get", "get_again")  # the GET runs of a point: the content cache empty, then filled by the first
PUT_RUNS = ("put", "s3_put", "raw_put")  # a round's runs, in order


@dataclass(frozen=True)
class PutRound:
    """One round of PUT runs: each run's figures (by :data:`PUT_RUNS` name, those measured), the keys each wrote and
    the share of the node's CPU its compiler threads took over the round."""

    figures: dict[str, dict]
    keys: list[str]
    s3_keys: list[str]
    raw_hashes: list[bytes]
    compiler_share: float


def _median_run(runs: list[dict]) -> dict:
    """The figures of the run of median rate (the lower one of an even count), with every run's rate beside them.

    Example::

        >>> _median_run([{"per_s": 3.0}, {"per_s": 1.0}, {"per_s": 2.0}])
        {'per_s': 2.0, 'rounds_per_s': [3.0, 1.0, 2.0]}
    """
    rates = [run["per_s"] for run in runs]
    median = statistics.median_low(rates)
    return next(run for run in runs if run["per_s"] == median) | {"rounds_per_s": rates}


def _figures(run: WrkRun | None, requests: int, seconds: float, size: int, cost, cache: dict | None = None) -> dict:
    """One measured operation: rates, latency (wrk only), the content cache's hits and misses (GET) and CPU
    per MB."""
    figures = {"requests": requests, "seconds": round(seconds, 3), "per_s": round(requests / seconds, 1),
               "mb_per_s": round(requests * size / MB / seconds, 2)}
    if run is not None:
        figures |= {"p50_ms": round(run.p50_ms, 2), "p99_ms": round(run.p99_ms, 2)}
    if cache is not None:
        figures |= cache
    return figures | {k: None if v is None else round(v, 2) for k, v in cost.per_mb(requests * size).items()}


def _cache_counts(server: ServerProcess) -> dict:
    """The server's content cache hits and misses so far, from ``/metrics``."""
    with urllib.request.urlopen(f"http://{server.host}:{server.metrics_port}/metrics", timeout=30) as response:
        text = response.read().decode()
    return {name: int(float(re.search(rf"^casstor_serve_cache_{name}_total (\S+)$", text, re.M).group(1)))
            for name in ("hits", "misses")}


def _counted(before: dict, after: dict) -> dict:
    return {"cache_hits": after["hits"] - before["hits"], "cache_misses": after["misses"] - before["misses"]}


class Sweep:
    """One bench run: the server, the store, the meters, the scratch table (see the module docstring)."""

    def __init__(self, config: SweepConfig, session, server: ServerProcess, scratch: ScratchTable | None,
                 node_pids: list[int], workdir: Path, s3: S3Face | None = None) -> None:
        self.config = config
        self.session = session
        self.server = server
        self.scratch = scratch
        self.store = Store(session)
        self.nodes = CpuMeter(node_pids)
        self.with_server = CpuMeter(node_pids, process_tree(server.process.pid))
        self.workdir = workdir
        self.prefix = f"bench-serve/{uuid.uuid4().hex[:8]}"
        self.s3 = s3
        self.with_s3 = None if s3 is None else CpuMeter(node_pids, process_tree(s3.server.process.pid))

    def _wrk(self, script: str, connections: int, args: list[str], s3: bool = False) -> tuple[WrkRun, object]:
        wait_for_quiet_nodes(self.session)
        server, meter = (self.s3.server, self.with_s3) if s3 else (self.server, self.with_server)
        with meter.measure() as cost:
            run = run_wrk(script, server.url(""), connections, self.config.seconds, args)
        return run, cost

    def warm_up(self) -> None:
        """PUTs of the first size for ``warmup_seconds``, not measured (their keys are removed with the rest)."""
        if not self.config.warmup_seconds:
            return
        run_wrk("put.lua", self.server.url(""), self.config.connections[0], self.config.warmup_seconds,
                self._put_args(f"{self.prefix}/warmup", self.config.sizes[0]))

    def _put_args(self, prefix: str, size: int) -> list[str]:
        """``put.lua``'s arguments: PUTs of ``size`` bytes under ``prefix``, from a file of random bytes made now."""
        random_file = self.workdir / f"random-{size}.bin"
        random_file.write_bytes(os.urandom(size))
        return ["/" + quote(prefix), str(size), str(random_file)]

    def point(self, size: int, connections: int, log: Callable[[str], None]) -> dict:
        """PUT (plain, S3, raw) in settling, then measured rounds; then GET, at one body size and connection count."""
        prefix = f"{self.prefix}/{size}-{connections}"
        runs = count(1)
        shares = settle(lambda: self._put_round(f"{prefix}/settle-{next(runs)}", size, connections).compiler_share,
                        self.config.settle, log)
        rounds = [self._put_round(f"{prefix}/{n}", size, connections) for n in range(self.config.rounds)]
        row = {"size": size, "connections": connections, "settling_compiler_shares": shares,
               "compiler_shares": [r.compiler_share for r in rounds]}
        row |= {op: _median_run([r.figures[op] for r in rounds]) for op in rounds[0].figures}
        paths = self.workdir / f"paths-{size}-{connections}.txt"
        paths.write_text("".join(f"/{quote(key)}\n" for r in rounds for key in r.keys))
        for op in GETS:
            before = _cache_counts(self.server)
            get, get_cost = self._wrk("get.lua", connections, [str(paths)])
            row[op] = _figures(get, get.requests, get.seconds, size, get_cost,
                               _counted(before, _cache_counts(self.server)))
        if self.s3 is not None:
            gets = self.s3.url_file(f"get-{size}-{connections}", "GET", [k for r in rounds for k in r.s3_keys])
            get, get_cost = self._wrk("get.lua", connections, [str(gets)], s3=True)
            row["s3_get"] = _figures(get, get.requests, get.seconds, size, get_cost)
            row |= {f"{op}_vs_plain": round(row[f"s3_{op}"]["per_s"] / row[op]["per_s"], 3) for op in ("put", "get")}
        if self.scratch is not None:
            row["raw_get"] = self._raw_get([h for r in rounds for h in r.raw_hashes], connections,
                                           max(row[op]["requests"] for op in GETS), size)
            row["put_ratio"] = round(row["put"]["per_s"] / row["raw_put"]["per_s"], 3)
            for op in GETS:
                row[f"{op}_ratio"] = round(row[op]["per_s"] / row["raw_get"]["per_s"], 3)
        log(format_row(row))
        return row

    def _put_round(self, prefix: str, size: int, connections: int) -> PutRound:
        """One round of PUTs of new bodies: the plain server's under ``prefix``, then the S3 server's (as many
        presigned URLs as the plain PUTs made, and half as many again: a run that gets further overwrites keys from
        the first), then the raw driver's (as many bodies as the plain PUTs), each on quiet nodes."""
        put, put_cost = self._wrk("put.lua", connections, self._put_args(prefix, size))
        keys = [head.id for head in self.store.list(prefix + "/")]
        if len(keys) < put.requests:
            raise CasstorError(f"wrk completed {put.requests} PUTs but only {len(keys)} keys are committed")
        figures = {"put": _figures(put, put.requests, put.seconds, size, put_cost)}
        costs = [put_cost]
        s3_keys: list[str] = []
        if self.s3 is not None:
            s3_prefix = prefix[len(self.prefix) + 1:] + "/"
            urls = self.s3.url_file(f"put-{s3_prefix[:-1].replace('/', '-')}", "PUT",
                                    [f"{s3_prefix}{n}" for n in range(put.requests * 3 // 2 + 100)])
            s3_put, s3_cost = self._wrk("put.lua", connections, [*self._put_args(s3_prefix, size), str(urls)],
                                        s3=True)  # put.lua takes the URLs' paths, not the prefix
            figures["s3_put"] = _figures(s3_put, s3_put.requests, s3_put.seconds, size, s3_cost)
            costs.append(s3_cost)
            s3_keys = self.s3.keys(s3_prefix)
        raw_hashes: list[bytes] = []
        if self.scratch is not None:
            figures["raw_put"], raw_cost, raw_hashes = self._raw_put(size, connections, put.requests)
            costs.append(raw_cost)
        return PutRound(figures, keys, s3_keys, raw_hashes, compiler_share(costs))

    def _raw_put(self, size: int, connections: int, puts: int) -> tuple[dict, Cost, list[bytes]]:
        """As many bodies of ``size`` as wrk PUT (the same bytes) through the driver alone, ``connections`` in flight:
        the figures, the cost and the keys written."""
        bodies = [os.urandom(size) for _ in range(max(1, min(puts, RAW_MAX_BYTES // size)))]
        blocks = [(hashlib.blake2b(os.urandom(16), digest_size=32).digest(), bodies[n % len(bodies)])
                  for n in range(max(1, puts))]
        wait_for_quiet_nodes(self.session)
        with self.nodes.measure() as cost:
            seconds = self.scratch.write(blocks, connections, retry_busy=True)
        return _figures(None, len(blocks), seconds, size, cost), cost, [digest for digest, _ in blocks]

    def _raw_get(self, hashes: list[bytes], connections: int, gets: int, size: int) -> dict:
        """As many reads of random keys of ``hashes`` as the GETs made (capped), ``connections`` in flight."""
        wanted = [random.choice(hashes) for _ in range(max(1, min(gets, RAW_MAX_READS)))]
        wait_for_quiet_nodes(self.session)
        with self.nodes.measure() as cost:
            seconds = self.scratch.read(wanted, connections, retry_busy=True)
        return _figures(None, len(wanted), seconds, size, cost)

    def dedup_check(self) -> dict:
        """PUT one 1 MB body under two keys: what the second one uploaded."""
        body = os.urandom(DEDUP_BYTES)
        results = [json.loads(_put(self.server, f"{self.prefix}/dedup/{name}", body)) for name in ("one", "two")]
        return {"bytes": DEDUP_BYTES, "first_new_bytes": results[0]["new_bytes"],
                "second_new_bytes": results[1]["new_bytes"]}

    def remove_keys(self) -> int:
        """Remove every key the run made (a few at a time, one writer lease); how many."""
        keys = [head.id for head in self.store.list(self.prefix + "/")]
        with WriterLease(self.session, "bench") as lease, ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda key: self.store.remove(key, lease=lease), keys))
        return len(keys)


def _put(server: ServerProcess, key: str, body: bytes) -> bytes:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=120)
    try:
        connection.request("PUT", "/" + quote(key), body=body)
        response = connection.getresponse()
        content = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise CasstorError(f"PUT {key}: HTTP {response.status}: {content[:200]!r}")
    return content


def run_sweep(config: SweepConfig, log: Callable[[str], None] = print) -> dict:
    """Measure every (size, connections) point of ``config``; the results (see :func:`format_report`)."""
    started = time.monotonic()
    with bench_session(log) as (session, _, _), tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        # The launcher's pid files under CASSTOR_HOME: an environment cluster started by it has them too.
        node_pids = [n.pid() for n in LocalCluster().nodes() if n.pid()]
        server = ServerProcess(*config.server_args())
        s3 = None
        try:
            s3 = S3Face(Path(tmp), config.server_args()) if config.s3 else None
            with ScratchTable(session) if config.raw else contextlib.nullcontext() as scratch:
                sweep = Sweep(config, session, server, scratch, node_pids, Path(tmp), s3)
                try:
                    sweep.warm_up()
                    rows = [sweep.point(size, connections, log)
                            for connections in config.connections for size in config.sizes]
                    dedup = sweep.dedup_check()
                    quiet = partial(wait_for_quiet_nodes, session)
                    multipart = s3.multipart_vs_tree(config.multipart_bytes, node_pids, quiet,
                                                     most_settling=config.settle, log=log) \
                        if s3 is not None and config.multipart_bytes else None
                    checksums = s3.checksum_uploads(config.checksum_bytes, node_pids, quiet) \
                        if s3 is not None and config.checksum_bytes else None
                    complete = s3.complete_many(config.complete_parts, quiet) \
                        if s3 is not None and config.complete_parts else None
                    deletes = s3.delete_many(config.delete_keys, quiet) if s3 is not None and config.delete_keys \
                        else None
                    uploads = s3.list_uploads(config.list_uploads, quiet) if s3 is not None and config.list_uploads \
                        else None
                finally:
                    removed = sweep.remove_keys() + (s3.remove_all() if s3 is not None else 0)
        finally:
            _stop(server)
            if s3 is not None:
                _stop(s3.server)
    return {"config": asdict(config), "client": "wrk 4.1 -t 1 (Lua scripts bench/wrk/)", "rows": rows,
            "dedup": dedup, "multipart": multipart, "checksums": checksums, "complete": complete,
            "deletes": deletes, "uploads": uploads, "keys_removed": removed,
            "inline_max": sweep.store.settings.inline_max, "seconds": round(time.monotonic() - started, 1)}


def _stop(server: ServerProcess) -> None:
    code, server_log = server.stop()
    if code != 0:
        raise CasstorError(f"casstor serve exited with {code}: {server_log[-500:]}")


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def _settling(shares: list[float], unit: str) -> str:
    """``3 settling rounds (33 %, 15 %, 4 %)``: how many ran, and the node's compiler's share of its CPU in each."""
    return f"{len(shares)} settling {unit}(s)" + (f" ({', '.join(map(_percent, shares))})" if shares else "")


def _share(figures: dict) -> float:
    """The share of the node's CPU its compiler threads took in a multipart or tree-store run (its figures)."""
    return compiler_share([Cost.of(figures)])


def _cpu(figures: dict, keys: tuple[str, ...]) -> str:
    return "/".join("-" if figures.get(k) is None else f"{figures[k]:.0f}" for k in keys)


def format_row(row: dict) -> str:
    """One (size, connections) point: HTTP and raw rates, latency, ratio, CPU ms per MB."""
    lines = []
    for op, (label, reference) in OPERATIONS.items():
        http, raw = row[op], row.get(reference)
        line = (f"  {size_label(row['size']):>7} c={row['connections']:<3} {label:<9} {http['per_s']:>8.1f} req/s "
                f"{http['mb_per_s']:>7.2f} MB/s  p50 {http['p50_ms']:>7.1f} ms  p99 {http['p99_ms']:>7.1f} ms"
                f"  CPU ms/MB server/wrk/node {_cpu(http, ('server_ms_per_mb', 'client_ms_per_mb', 'node_ms_per_mb'))}")
        if "cache_hits" in http:
            line += f"  cache hits {http['cache_hits']}/{http['cache_hits'] + http['cache_misses']}"
        if raw is not None:
            line += (f" | raw {raw['per_s']:>8.1f} req/s {raw['mb_per_s']:>7.2f} MB/s, CPU ms/MB driver/node "
                     f"{_cpu(raw, ('client_ms_per_mb', 'node_ms_per_mb'))} | HTTP/raw {row[f'{op}_ratio']:.3f}")
        lines.append(line)
    for op in ("put", "get"):
        if f"s3_{op}" in row:
            s3 = row[f"s3_{op}"]
            lines.append(f"  {size_label(row['size']):>7} c={row['connections']:<3} S3 {op.upper():<6} {s3['per_s']:>8.1f} "
                         f"req/s {s3['mb_per_s']:>7.2f} MB/s  p50 {s3['p50_ms']:>7.1f} ms  p99 {s3['p99_ms']:>7.1f} ms"
                         f"  CPU ms/MB server/wrk/node "
                         f"{_cpu(s3, ('server_ms_per_mb', 'client_ms_per_mb', 'node_ms_per_mb'))}"
                         f" | S3/plain {row[f'{op}_vs_plain']:.3f}")
    rates = "; ".join(f"{name} " + "/".join(f"{rate:.0f}" for rate in row[op]["rounds_per_s"])
                      for op, name in zip(PUT_RUNS, ("plain", "S3", "raw")) if op in row)
    lines.append(f"  {size_label(row['size']):>7} c={row['connections']:<3} PUT req/s by round: {rates}; the node's "
                 f"compiler's share of its CPU in each round {', '.join(map(_percent, row['compiler_shares']))}, "
                 f"after {_settling(row['settling_compiler_shares'], 'round')}")
    return "\n".join(lines)


def format_report(results: dict) -> str:
    config = results["config"]
    dedup = results["dedup"]
    inline = results.get("inline_max", 0)
    head = (f"casstor serve under {results['client']}, {config['seconds']:g} s a run, the PUTs' figures the median of "
            f"{config['rounds']} alternated rounds (plain, S3, raw) after at most {config['settle']} settling rounds, "
            f"{config['workers']} worker(s), "
            f"access log {'on' if config['access_log'] else 'off'}, "
            f"{f'files up to {inline} bytes inline' if inline else 'no inline files'}; raw = the Python driver on "
            f"a one-row-per-key table at the same concurrency (1 MB = 10^6 bytes)")
    check = (f"dedup: a second PUT of the same {size_label(dedup['bytes'])} body under another key uploaded "
             f"{dedup['second_new_bytes']} new bytes (the first: {dedup['first_new_bytes']})")
    multipart = results.get("multipart")
    if multipart:
        up, tree = multipart["multipart"], multipart["tree_store"]
        check += (f"\nS3 multipart upload of {size_label(multipart['bytes'])} ({size_label(multipart['part_bytes'])} "
                  f"parts, boto3's transfer manager): {up['mb_per_s']:.1f} MB/s, CPU ms/MB client/server/node "
                  f"{_cpu(up, ('client_ms_per_mb', 'server_ms_per_mb', 'node_ms_per_mb'))}; casstor store of a tree "
                  f"of as many bytes: {tree['mb_per_s']:.1f} MB/s, client/node "
                  f"{_cpu(tree, ('client_ms_per_mb', 'node_ms_per_mb'))}; multipart/tree {multipart['ratio']:.3f} "
                  f"(medians of {multipart['rounds']} alternated pairs on quiet nodes; each pair "
                  f"{', '.join(f'{r:.3f}' for r in multipart['ratios'])}; after "
                  f"{_settling(multipart['settling_compiler_shares'], 'pair')}; the node's compiler's share of its "
                  f"CPU in the medians: multipart {_percent(_share(up))}, tree store {_percent(_share(tree))})")
    checksums = results.get("checksums")
    if checksums:
        check += (f"\nS3 multipart uploads of {size_label(checksums['bytes'])} by checksum (medians of "
                  f"{checksums['rounds']}; of CRC32's MB/s; CPU ms/MB client/server/node): " + ", ".join(
                      f"{name} {up['mb_per_s']:.1f} MB/s {checksums['ratios'][name]:.3f} "
                      f"{_cpu(up, ('client_ms_per_mb', 'server_ms_per_mb', 'node_ms_per_mb'))}"
                      for name, up in checksums["uploads"].items()))
    complete = results.get("complete")
    if complete:
        check += (f"\nS3 CompleteMultipartUpload of {complete['parts']} parts: {complete['seconds']:.2f} s, "
                  f"{complete['ms_per_part']:.2f} ms a part; 10,000 parts / botocore's 60 s read timeout "
                  f"{complete['of_read_timeout']:.3f}")
    deletes = results.get("deletes")
    if deletes:
        check += (f"\nS3 ListObjectVersions of {deletes['keys']} keys, 1,000 a page: "
                  f"{deletes['versions_seconds']:.2f} s, {deletes['versions_ms_per_key']:.2f} ms a key; "
                  f"DeleteObjects of them, 1,000 a request: "
                  f"{deletes['seconds']:.2f} s, {deletes['ms_per_key']:.2f} ms a key")
    uploads = results.get("uploads")
    if uploads:
        check += (f"\nS3 ListMultipartUploads of {uploads['uploads']} uploads under way, 1,000 a page: "
                  f"{uploads['seconds']:.2f} s, {uploads['ms_per_upload']:.2f} ms an upload (median of "
                  f"{', '.join(f'{t:.2f}' for t in uploads['rounds'])} s)")
    return "\n".join([head, *(format_row(row) for row in results["rows"]), check])


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m bench.serve", description=__doc__.splitlines()[0])
    defaults = SweepConfig()
    parser.add_argument("--sizes", type=int, nargs="+", help=f"body sizes in bytes (default {defaults.sizes})")
    parser.add_argument("--connections", type=int, nargs="+", help="wrk connections (default 20)")
    parser.add_argument("--seconds", type=float, help="seconds per wrk run (default 30)")
    parser.add_argument("--warmup", type=float, help="seconds of unmeasured PUTs first (default 20; 0: none)")
    parser.add_argument("--settle", type=int, choices=range(MAX_ROUNDS + 1), metavar=f"0-{MAX_ROUNDS}",
                        help=f"rounds of PUTs after the warm-up, at most, until the node's compiler took under "
                        f"{100 * SETTLED_SHARE:.0f} %% of its CPU in one (default {defaults.settle})")
    parser.add_argument("--rounds", type=int, choices=range(1, MAX_ROUNDS + 1), metavar=f"1-{MAX_ROUNDS}",
                        help=f"measured rounds of PUTs; each figure the median round's (default {defaults.rounds})")
    parser.add_argument("--workers", type=int, default=1, help="the server's --workers (default 1)")
    parser.add_argument("--access-log", action="store_true", help="run the server with --access-log")
    parser.add_argument("--cache-mb", type=int, help="the server's --cache-mb (default: its own default)")
    parser.add_argument("--no-raw", action="store_true", help="skip the raw driver reference")
    parser.add_argument("--smoke", action="store_true", help="a short run: 4 and 64 KiB, 4 connections, 2 s")
    parser.add_argument("--s3", action="store_true", help="also through casstor serve --s3, signed (presigned URLs)")
    parser.add_argument("--multipart-mb", type=int, default=0, metavar="MIB",
                        help="with --s3: a multipart upload of MIB MiB against a tree store of as many (1024: 1 GiB)")
    parser.add_argument("--checksum-mb", type=int, default=0, metavar="MIB",
                        help="with --s3: uploads of MIB MiB with each checksum boto3 offers, against its default CRC32")
    parser.add_argument("--complete-parts", type=int, default=0, metavar="N",
                        help="with --s3: the CompleteMultipartUpload of an upload of N parts (S3 allows 10,000)")
    parser.add_argument("--delete-keys", type=int, default=0, metavar="N",
                        help="with --s3: ListObjectVersions then DeleteObjects of N keys, 1,000 a page and a request")
    parser.add_argument("--list-uploads", type=int, default=0, metavar="N",
                        help="with --s3: ListMultipartUploads of N uploads under way, 1,000 a page")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"results JSON (default {RESULTS})")
    args = parser.parse_args(argv)
    chosen = {key: tuple(value) if isinstance(value, list) else value
              for key, value in [("sizes", args.sizes), ("connections", args.connections), ("seconds", args.seconds),
                                 ("warmup_seconds", args.warmup), ("settle", args.settle), ("rounds", args.rounds)]
              if value is not None}
    if (args.multipart_mb or args.checksum_mb or args.complete_parts or args.delete_keys or args.list_uploads) \
            and not args.s3:
        parser.error("--multipart-mb, --checksum-mb, --complete-parts, --delete-keys and --list-uploads need --s3")
    if not 0 <= args.complete_parts <= 10_000:
        parser.error("--complete-parts: S3 allows 1 to 10,000 parts")
    if args.delete_keys < 0 or args.list_uploads < 0:
        parser.error("--delete-keys, --list-uploads: a number")
    options = dict(chosen, workers=args.workers, access_log=args.access_log, raw=not args.no_raw,
                   cache_mb=args.cache_mb, s3=args.s3, multipart_bytes=args.multipart_mb * 1024 * 1024,
                   checksum_bytes=args.checksum_mb * 1024 * 1024, complete_parts=args.complete_parts,
                   delete_keys=args.delete_keys, list_uploads=args.list_uploads)
    config = SweepConfig.smoke(**options) if args.smoke else replace(defaults, **options)

    def run() -> int:
        results = run_sweep(config, log=print)
        if results["dedup"]["second_new_bytes"] != 0:
            raise CasstorError(f"the second PUT of the same body uploaded {results['dedup']['second_new_bytes']} "
                               f"bytes: dedup failed")
        return publish(results, format_report(results), args.output)

    return run_reporting_errors(run)


if __name__ == "__main__":
    raise SystemExit(main())
