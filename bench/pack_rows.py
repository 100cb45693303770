"""Pack rows, measured before they are built: what a small PUT's writes cost the node, in four shapes.

Issue 29 asks for a ``casstor serve`` 64 KiB PUT at half the raw driver's
rate. A PUT makes ~3.1 mutations (its block, the block's index row, its
version row, a tenth of a directory's entries) where a raw write makes one;
packing a group commit's blocks into one partition would make that ~2.2.
This bench writes, with nothing but the driver, into scratch tables shaped
like the store's, what a group of ``group`` PUTs writes, each shape after
the other on quiet nodes, in alternated rounds:

* ``raw``: each body one row (hash, size, content), one request each:
  ``bench.serve``'s reference.
* ``rows`` (the store today): an existence check of the group's hashes;
  each block its own row, one request each; then the blocks' index rows,
  their version rows and their directory entries, an unlogged batch each.
* ``joined``: as ``rows``, with each block's row and its index row sent as
  one batch of one partition key (one mutation of two tables): what the
  store's commit order costs. The store does not write this way: at more
  than one replica, a write that times out on one leaves a row and its
  index there, and a read repair may copy the index row alone to the others.
* ``packs``: as ``rows``, with the group's blocks as the clustering rows of
  one pack partition (a single-partition batch, one mutation whatever its
  size) and each index row naming its pack and place.

Every content table takes the store's ``NoopCompressor`` (the bodies are
random, as a compressed block is). The figures are each shape's median
round: bodies a second, node and client CPU ms a body; each ratio (to
``raw``, and of ``joined`` and ``packs`` to ``rows``) is the median of the
rounds' own ratios. Not measured here: the HTTP server's own CPU
(``bench.serve``), and what packs would cost elsewhere (a GET reads one
clustering row, as it reads a block row; reclaim and verify would walk
packs).

Example::

    .venv/bin/python -m bench.pack_rows                  # groups of 10, 800 groups a run, 2 + 3 rounds
    .venv/bin/python -m bench.pack_rows --quick          # for tests

Failures: a CQL error stops the run with a one-line ``casstor:`` message and a
non-zero status; the scratch keyspace is dropped even then.
"""

from __future__ import annotations

import itertools
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from cassandra.cluster import Session
from cassandra.util import uuid_from_time

from bench.common import bench_session, median_figures, run_and_publish, wait_for_quiet_nodes
from bench.cpu import CpuMeter
from bench.raw_driver import scratch_keyspace
from casstor_ops.cli.args import OneLineParser, positive_int
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError
from casstor_ops.store.cql.request_queue import unlogged_batch
from casstor_ops.store.cql.statements import Query
from casstor_ops.store.schema import NODE_COMPRESSION

KS = "casstor_bench_packs"
SHAPES = ("raw", "rows", "joined", "packs")
_INDEXED = SHAPES[1:]  # the shapes that write index rows, heads and entries
DEFAULT_OUTPUT = project_root() / "bench" / "results" / "pack_rows.json"
BODY_POOL = 256  # distinct random bodies; the writes cycle through them under fresh hashes
_CONTENT = f"WITH compression = {NODE_COMPRESSION[True]}"


@dataclass(frozen=True)
class PackConfig:
    """What to write: ``groups`` groups of ``group`` bodies of ``size`` bytes a run, ``in_flight`` groups at once."""

    size: int = 64 * 1024
    group: int = 10          # the plain server's group commit took 9.7-9.9 PUTs a batch at 20 connections
    in_flight: int = 2       # groups at once: 20 bodies, bench.serve's 20 connections
    groups: int = 800        # 8,000 bodies, 0.5 GB: about what a 15 s PUT run of bench.serve writes
    warmup: int = 2
    rounds: int = 3

    @classmethod
    def quick(cls) -> "PackConfig":
        return cls(group=4, groups=20, warmup=0, rounds=1)


def mutations_per_body(shape: str, group: int) -> float:
    """The mutations a body costs the node in ``shape`` (a partition written by one request is one mutation).

    Example::

        >>> [round(mutations_per_body(shape, 10), 2) for shape in SHAPES]
        [1.0, 3.1, 2.1, 2.2]
    """
    per_group = {"raw": group, "rows": 3 * group + 1, "joined": 2 * group + 1, "packs": 2 * group + 2}[shape]
    return per_group / group


_DDL = [
    f"CREATE TABLE {KS}.raw_blocks (hash blob PRIMARY KEY, size int, content blob) {_CONTENT}",
    f"CREATE TABLE {KS}.rows_blocks (hash blob PRIMARY KEY, size int, codec text, content blob) {_CONTENT}",
    f"CREATE TABLE {KS}.packs_packs (pack timeuuid, seq int, hash blob, size int, codec text, content blob, "
    f"PRIMARY KEY (pack, seq)) {_CONTENT}",
    f"CREATE TABLE {KS}.joined_blocks (hash blob PRIMARY KEY, size int, codec text, content blob) {_CONTENT}",
    *(ddl for shape in _INDEXED for ddl in (
        f"CREATE TABLE {KS}.{shape}_index (hash blob PRIMARY KEY, size int, stored_size int, pack timeuuid, seq int)",
        f"CREATE TABLE {KS}.{shape}_versions (id text, version timeuuid, size bigint, hash blob, lone_block blob, "
        f"committed_at timestamp, PRIMARY KEY (id, version)) WITH CLUSTERING ORDER BY (version DESC)",
        f"CREATE TABLE {KS}.{shape}_entries (dir text, bucket int, name text, version timeuuid, size bigint, "
        f"hash blob, lone_block blob, PRIMARY KEY ((dir, bucket), name))")),
]


class Scratch:
    """The scratch tables' prepared statements, and one group of each shape written with them."""

    def __init__(self, session: Session) -> None:
        self.session = session
        p = session.prepare
        self.raw = p(f"INSERT INTO {KS}.raw_blocks (hash, size, content) VALUES (?, ?, ?)")
        self.block = {s: p(f"INSERT INTO {KS}.{s}_blocks (hash, size, codec, content) VALUES (?, ?, ?, ?)")
                      for s in ("rows", "joined")}
        self.pack = p(f"INSERT INTO {KS}.packs_packs (pack, seq, hash, size, codec, content) VALUES (?, ?, ?, ?, ?, ?)")
        self.check = {s: p(f"SELECT hash FROM {KS}.{s}_index WHERE hash IN ? LIMIT ?") for s in _INDEXED}
        self.index = {s: p(f"INSERT INTO {KS}.{s}_index (hash, size, stored_size, pack, seq) VALUES (?, ?, ?, ?, ?)")
                      for s in _INDEXED}
        self.version = {s: p(f"INSERT INTO {KS}.{s}_versions (id, version, size, hash, lone_block, committed_at) "
                             f"VALUES (?, ?, ?, ?, ?, toTimestamp(now()))") for s in _INDEXED}
        self.entry = {s: p(f"INSERT INTO {KS}.{s}_entries (dir, bucket, name, version, size, hash, lone_block) "
                           f"VALUES (?, 0, ?, ?, ?, ?, ?)") for s in _INDEXED}

    def write(self, shape: str, bodies: list[tuple[bytes, bytes]], directory: str) -> None:
        """Write one group of ``(hash, body)`` as ``shape`` does, each step once the one before is acknowledged."""
        if shape == "raw":
            self._all([Query(self.raw, (h, len(b), b)) for h, b in bodies])
            return
        hashes = [h for h, _ in bodies]
        if self.session.execute(self.check[shape], (hashes, len(hashes))).all():
            raise CasstorError(f"fresh hashes found in {KS}.{shape}_index")
        places = self._contents(shape, bodies)
        if shape != "joined":
            self._batch([Query(self.index[shape], (h, len(b), len(b), *place))
                         for (h, b), place in zip(bodies, places)])
        heads = [(h.hex()[:16], uuid_from_time(time.time()), h, len(b)) for h, b in bodies]
        self._batch([Query(self.version[shape], (f"{directory}/{name}", version, size, h, h))
                     for name, version, h, size in heads])
        self._batch([Query(self.entry[shape], (directory, name, version, size, h, h))
                     for name, version, h, size in heads])

    def _contents(self, shape: str, bodies: list[tuple[bytes, bytes]]) -> list[tuple]:
        """Write the group's contents as ``shape`` does; each body's place in its pack (none outside ``packs``)."""
        if shape == "packs":
            pack = uuid_from_time(time.time())
            self._batch([Query(self.pack, (pack, n, h, len(b), None, b)) for n, (h, b) in enumerate(bodies)])
            return [(pack, n) for n in range(len(bodies))]
        if shape == "rows":
            self._all([Query(self.block["rows"], (h, len(b), None, b)) for h, b in bodies])
        else:
            self._all([(unlogged_batch([Query(self.block["joined"], (h, len(b), None, b)),
                                        Query(self.index["joined"], (h, len(b), len(b), None, None))]),)
                       for h, b in bodies])
        return [(None, None)] * len(bodies)

    def _batch(self, rows: list[Query]) -> None:
        self.session.execute(unlogged_batch(rows))

    def _all(self, requests: list[tuple]) -> None:
        """Send every request (a :class:`Query`, or a batch alone in a tuple) at once; wait for each answer."""
        for future in [self.session.execute_async(*request) for request in requests]:
            future.result()


def write_run(scratch: Scratch, shape: str, config: PackConfig, pool: list[bytes]) -> float:
    """Write ``config.groups`` groups of fresh hashes as ``shape``, ``config.in_flight`` at once; the seconds."""
    directory = f"d{uuid.uuid4().hex[:8]}"
    counter, lock = itertools.count(), threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while True:
                with lock:
                    n = next(counter)
                if n >= config.groups or errors:
                    return
                bodies = [(os.urandom(32), pool[(n * config.group + k) % len(pool)]) for k in range(config.group)]
                scratch.write(shape, bodies, directory)
        except BaseException as error:  # noqa: B036 -- handed to the caller's thread, raised there
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(config.in_flight)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - start


def run_bench(config: PackConfig, log: Callable[[str], None]) -> dict:
    """Alternated rounds of the three shapes on quiet nodes; each run's figures and each shape's median."""
    pool = [os.urandom(config.size) for _ in range(min(BODY_POOL, config.groups * config.group))]
    bodies = config.groups * config.group
    runs: dict[str, list[dict]] = {shape: [] for shape in SHAPES}
    with bench_session(log) as (session, _, _), scratch_keyspace(session, KS, _DDL):
        scratch = Scratch(session)
        meter = CpuMeter([n.pid() for n in LocalCluster().nodes() if n.pid()])
        for index in range(config.warmup + config.rounds):
            measured = index >= config.warmup
            log(f"{'round' if measured else 'warm-up round'} {index + 1 - config.warmup * measured}")
            for shape in SHAPES:
                wait_for_quiet_nodes(session)
                with meter.measure() as cost:
                    seconds = write_run(scratch, shape, config, pool)
                figures = {"per_s": bodies / seconds, "client_ms": 1000 * cost.client_s / bodies,
                           "node_ms": None if cost.node_s is None else 1000 * cost.node_s / bodies,
                           "compiler_ms": None if cost.compiler_s is None else 1000 * cost.compiler_s / bodies}
                log(f"  {shape:<6} {figures['per_s']:8.0f} bodies/s  " + _cpu(figures))
                if measured:
                    runs[shape].append(figures)
    medians = {shape: median_figures(runs[shape]) for shape in SHAPES}
    return {"config": asdict(config), "runs": runs, "medians": medians,
            "mutations_per_body": {shape: mutations_per_body(shape, config.group) for shape in SHAPES},
            "ratios": _ratios(runs)}


def _ratios(runs: dict[str, list[dict]]) -> dict[str, float]:
    """Each ratio the median of its rounds' own: the shapes of a round ran minutes apart at most, where the medians
    of different rounds may be an hour apart on a shared machine."""
    pairs = [(shape, "raw") for shape in _INDEXED] + [(shape, "rows") for shape in ("joined", "packs")]
    ratios = {f"{a}_per_s_of_{b}": _median_ratio(runs[a], runs[b], "per_s") for a, b in pairs}
    if runs["rows"][0]["node_ms"] is not None:
        for a, b in [("rows", "raw"), ("joined", "rows"), ("packs", "rows")]:
            ratios[f"{a}_node_ms_of_{b}"] = _median_ratio(runs[a], runs[b], "node_ms")
    return ratios


def _median_ratio(runs: list[dict], references: list[dict], key: str) -> float:
    return round(statistics.median(run[key] / reference[key] for run, reference in zip(runs, references)), 3)


def _cpu(figures: dict) -> str:
    node = "n/a" if figures["node_ms"] is None else f"{figures['node_ms']:.2f} (compiler {figures['compiler_ms']:.2f})"
    return f"CPU ms a body: client {figures['client_ms']:.2f}, node {node}"


def format_report(results: dict) -> str:
    config = results["config"]
    lines = [f"{config['size'] // 1024} KiB bodies in groups of {config['group']}, {config['in_flight']} groups in "
             f"flight, {config['groups'] * config['group']} bodies a run; medians of {config['rounds']} alternated "
             f"rounds after {config['warmup']} warm-up rounds, each run on quiet nodes:"]
    for shape in SHAPES:
        figures = results["medians"][shape]
        lines.append(f"  {shape:<6} {results['mutations_per_body'][shape]:.1f} mutations a body  "
                     f"{figures['per_s']:8.0f} bodies/s  " + _cpu(figures))
    lines.append("ratios: " + ", ".join(f"{key} {value:.3f}" for key, value in results["ratios"].items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m bench.pack_rows", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="groups of 4, 20 groups, one round, no warm-up")
    parser.add_argument("--group", type=positive_int, help="bodies a group (default 10)")
    parser.add_argument("--groups", type=positive_int, help="groups a run (default 800)")
    parser.add_argument("--rounds", type=positive_int, help="measured rounds (default 3)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    chosen = {k: v for k, v in (("group", args.group), ("groups", args.groups), ("rounds", args.rounds))
              if v is not None}
    config = replace(PackConfig.quick() if args.quick else PackConfig(), **chosen)
    return run_and_publish(lambda log: run_bench(config, log), format_report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
