"""Store and restore throughput of casstor, each figure a ratio against a reference of the same run.

One run, one machine, one cluster: the cluster of the environment
(:func:`casstor_ops.cluster.connection.endpoint_from_env`: the embedded local node
of ``$CASSTOR_HOME``, or ``CASSTOR_NODES``). If the embedded node is not
running, the bench starts it and stops it again at the end; a node that was
already running is left running. The store is initialised if it is not.

On a generated corpus (:mod:`casstor_ops.lab.corpus`, a fresh seed per run so
"new" data is really new to the store) it measures, in MB/s (10^6 bytes):

============================  ===========================================  ====
figure                        reference (same bytes, same run)             goal
============================  ===========================================  ====
store of new data             raw driver write of the same blocks, best    0.9
                              of several concurrencies (``raw_driver``)
store of duplicate data       one-core chunk + BLAKE2b of the same bytes   0.7
restore                       raw driver read of the same blocks (``IN``   0.9
                              of 4 or 16 a request), best
store of new data             ``restic backup`` of the same files          1.0
restore                       ``restic restore`` of the same files         1.0
============================  ===========================================  ====

and the dedup of the whole corpus (new data + every version of the tree):
block bytes casstor stored vs restic's ``stats --mode raw-data``.

Every casstor figure is measured in one process, and again in ``--procs N``
processes (whole files spread over N spawned processes) when N > 1; the
report says which mode meets each goal. Every figure, casstor's and the
references', is the best of ``--repeat`` measurements (each store of new
data on freshly generated data): on a shared machine other load only ever
slows a measurement down. Every measurement starts on quiet nodes (no
compaction running, :func:`bench.common.wait_for_quiet_nodes`), so none pays for the
compaction of the writes measured before it. The bench's files are stored under
``bench/<run>/`` and removed at the end (their blocks stay until a reclaim)
unless ``--keep``; the raw-driver scratch keyspace is dropped. Every
session is :func:`casstor_ops.cluster.connection.connect`'s, as the CLI's.

Usage::

    .venv/bin/python -m bench.store_restore            # ~256 MiB new + 5 x 68 MiB tree
    .venv/bin/python -m bench.store_restore --quick    # tiny sizes, ~1 minute

From Python (notebook 04)::

    >>> from bench.store_restore import BenchConfig, run_benchmark   # doctest: +SKIP
    >>> results = run_benchmark(BenchConfig.quick())                # doctest: +SKIP
    >>> results["ratios"]["store_new_vs_raw_write"]["value"]        # doctest: +SKIP
    0.93

Results are printed and written as JSON (default
``bench/results/store_restore.json``). Failures print ``casstor: ...``
and exit non-zero; the temporary corpus and restic repository are removed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import filecmp
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from cassandra.cluster import Session

from bench.common import MB, MIB, bench_session, chunk_hash_seconds, publish, wait_for_quiet_nodes
from bench.parallel import run_parallel
from bench.cpu import CpuMeter
from bench.raw_driver import ScratchTable
from bench.restic import ResticRepo
from bench.store_restore_report import compute_ratios, format_report
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.connection import Endpoint
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.lab import corpus
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.schema import StoreSettings

T = TypeVar("T")
DEFAULT_OUTPUT = project_root() / "bench" / "results" / "store_restore.json"
# Blocks per raw read request: single-key reads, and IN of 4 (what casstor's restore sends).
# Blocks a raw read request asks for: 4, and 16 (the restore's own pattern). Single-key reads were the
# slowest pattern in every run (e.g. 88 vs 189 vs 299 MB/s at concurrency 8), so they are not swept.
READ_KEYS_PER_REQUEST = (4, 16)


@dataclass
class BenchConfig:
    """Sizes and options of one run (the CLI flags map 1:1 onto these)."""

    new_bytes: int = 256 * MIB
    new_files: int = 4
    tree_versions: int = 5
    tree_files: int = 4
    tree_file_bytes: int = 16 * MIB
    # libev raises ConnectionBusy past ~64 in-flight 64 KiB requests (docs/driver.md)
    # Every best raw figure came from 8-32 in flight; 64 in flight: libev ConnectionBusy.
    concurrencies: tuple[int, ...] = (8, 16, 32)
    procs: int = field(default_factory=lambda: os.cpu_count() or 1)
    repeat: int = 3              # measurements per figure; the best counts
    restic: bool = True
    seed: int | None = None      # None: a fresh seed, so the data is new to the store
    keep: bool = False           # keep the bench's files in the store

    @classmethod
    def quick(cls, **overrides: object) -> "BenchConfig":
        """Tiny sizes for tests and smoke runs (about a minute)."""
        base = dict(new_bytes=16 * MIB, new_files=2, tree_versions=3, tree_files=2,
                    tree_file_bytes=2 * MIB, concurrencies=(16, 48), repeat=1)
        return cls(**{**base, **overrides})


def _mbps(nbytes: int, seconds: float) -> float:
    return nbytes / MB / max(seconds, 1e-9)


def unique_blocks(paths: list[Path], settings: StoreSettings) -> dict[bytes, bytes]:
    """hash -> content of every distinct block of ``paths`` (untimed preparation of the raw reference)."""
    return {block_hash(c): bytes(c) for path in paths for c in chunks(path, settings)}


def _put_all(store: Store, jobs: list[tuple[Path, str]]) -> tuple[float, list]:
    start = time.perf_counter()
    results = [store.put(path, file_id) for path, file_id in jobs]
    return time.perf_counter() - start, results


def _restore_all(store: Store, jobs: list[tuple[Path, str]]) -> float:
    start = time.perf_counter()
    for path, file_id in jobs:
        store.restore(file_id, path)
    return time.perf_counter() - start


def _check_restored(jobs: list[tuple[Path, str]], originals: list[Path]) -> None:
    for (restored, file_id), original in zip(jobs, originals):
        if not filecmp.cmp(restored, original, shallow=False):
            raise CasstorError(f"restored {file_id} differs from {original}")


class _Run:
    """The state of one benchmark run: store, corpus, results, and the ids to remove afterwards."""

    def __init__(self, config: BenchConfig, session: Session, endpoint: Endpoint, work: Path,
                 log: Callable[[str], None]) -> None:
        self.config, self.session, self.endpoint, self.work, self.log = config, session, endpoint, work, log
        self.store = Store(session)
        self.settings = self.store.settings
        self.seed = config.seed if config.seed is not None else time.time_ns() % (1 << 63)
        self.prefix = f"bench/{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{self.seed % 10**6:06d}"
        self.stored_ids: list[str] = []
        self.mbps: dict[str, float] = {}
        self.cpu = CpuMeter([n.pid() for n in LocalCluster().nodes() if n.pid()] if endpoint.embedded else [])
        self.cpu_per_mb: dict[str, dict] = {}
        self.results: dict = {}

    def measure(self, name: str, nbytes: int, action: Callable[[], tuple[float, T]], sweep: str | None = None,
                concurrency: int | None = None) -> T:
        """One measurement of figure ``name``, started on quiet nodes; ``action()`` -> (seconds, result).

        The figure is the best measurement so far, with that measurement's CPU
        cost; ``sweep``/``concurrency`` also file it under the raw sweeps.
        """
        wait_for_quiet_nodes(self.session)
        with self.cpu.measure() as cost:
            seconds, result = action()
        rate = _mbps(nbytes, seconds)
        if rate > self.mbps.get(name, 0.0):
            self.mbps[name] = rate
            self.cpu_per_mb[name] = cost.per_mb(nbytes)
            if sweep:
                self.results.setdefault("raw_best", {})[name] = f"{sweep}, concurrency {concurrency}"
        if sweep:
            rates = self.results.setdefault("raw_sweeps", {}).setdefault(sweep, {})
            rates[str(concurrency)] = max(rate, rates.get(str(concurrency), 0.0))
        self.log(f"{name:<28} {rate:9.1f} MB/s  ({nbytes / MB:.1f} MB in {seconds:.2f} s"
                 f"{f'; {sweep}, concurrency {concurrency}' if sweep else ''})")
        return result

    def jobs(self, paths: list[Path], kind: str, root: Path) -> list[tuple[Path, str]]:
        ids = [f"{self.prefix}/{kind}/{p.relative_to(root).as_posix()}" for p in paths]
        self.stored_ids += ids
        return list(zip(paths, ids))

    def put(self, name: str, jobs: list[tuple[Path, str]], procs: int = 1) -> list:
        nbytes = sum(p.stat().st_size for p, _ in jobs)
        if procs > 1:
            return self.measure(name, nbytes, lambda: run_parallel(self.endpoint, "put", jobs, procs))
        return self.measure(name, nbytes, lambda: _put_all(self.store, jobs))

    def restore(self, name: str, jobs: list[tuple[Path, str]], originals: list[Path], procs: int = 1) -> None:
        jobs = [(self.work / "restore" / name / Path(p).name, i) for p, i in jobs]
        jobs[0][0].parent.mkdir(parents=True)
        nbytes = sum(p.stat().st_size for p in originals)
        if procs > 1:
            self.measure(name, nbytes, lambda: run_parallel(self.endpoint, "restore", jobs, procs))
        else:
            self.measure(name, nbytes, lambda: (_restore_all(self.store, jobs), None))
        _check_restored(jobs, originals)
        shutil.rmtree(jobs[0][0].parent)

    def cleanup(self) -> None:
        if self.config.keep:
            return
        for file_id in self.stored_ids:
            with contextlib.suppress(CasstorError):  # a put that failed left nothing to remove
                self.store.remove(file_id)


def _raw_driver(run: _Run, new: list[Path]) -> None:
    """Raw-driver writes and reads of the unique blocks of the new data at each concurrency; the best are the
    references."""
    blocks = unique_blocks(new, run.settings)
    nbytes = sum(map(len, blocks.values()))
    items, hashes = list(blocks.items()), list(blocks)
    concurrencies = run.config.concurrencies
    with ScratchTable(run.session) as scratch:
        # An untimed pass first: a cold node (JIT, fresh commit log) would flatter everything measured after it.
        scratch.write(items, max(concurrencies))
        for _ in range(run.config.repeat):
            for c in concurrencies:
                run.measure("raw_write_best", nbytes, lambda: (scratch.write(items, c), None), "write", c)
            for c in concurrencies:  # reads after all writes: no compaction to wait for between them
                for per_read in READ_KEYS_PER_REQUEST:
                    run.measure("raw_read_best", nbytes, lambda: (scratch.read(hashes, c, per_read), None),
                                f"read {per_read} block(s)/request", c)
    run.results["sizes"].update(blocks=len(blocks), block_bytes=nbytes)


def _casstor(run: _Run, new: list[Path], new_dir: Path) -> list[int]:
    """Every casstor store/restore figure, ``repeat`` times per mode; the new bytes the first store wrote.

    The first measurement stores ``new`` (the data of the raw reference and
    restic); every other one stores data generated for it.
    """
    config = run.config
    # Untimed, as the raw reference's first pass: warms the node's paths for casstor's tables and this process.
    warm_dir = run.work / "warm-up"
    warm = run.jobs(corpus.write_new_data(warm_dir, min(config.new_bytes, 32 * MIB), 1, run.seed - 1),
                    "warm-up", warm_dir)
    _put_all(run.store, warm)
    _restore_all(run.store, [(warm_dir / "restored", warm[0][1])])
    shutil.rmtree(warm_dir)
    modes = [("", 1)] + ([("_procs", config.procs)] if config.procs > 1 else [])
    first_written = []
    for index, (suffix, procs) in enumerate((s, p) for s, p in modes for _ in range(config.repeat)):
        if index == 0:
            paths, root = new, new_dir
        else:
            root = run.work / f"new-{index}"
            paths = corpus.write_new_data(root, config.new_bytes, config.new_files, run.seed + index)
        first = run.jobs(paths, f"new-{index}", root)
        stored = run.put("store_new" + suffix, first, procs)
        run.put("store_dup" + suffix, run.jobs(paths, f"dup-{index}", root), procs)
        run.restore("restore" + suffix, first, paths, procs)
        if index == 0:
            first_written = [r.new_bytes for r in stored]
        else:
            shutil.rmtree(root)
    return first_written


def _tree(run: _Run, versions: list[Path], tree_dir: Path) -> list[dict]:
    """Store every version in order: what an edited version costs."""
    rows = []
    for version in versions:
        jobs = run.jobs(corpus.tree_files(version), "tree", tree_dir)
        wait_for_quiet_nodes(run.session)
        seconds, results = _put_all(run.store, jobs)
        nbytes = sum(r.bytes for r in results)
        rows.append(dict(version=version.name, bytes=nbytes, new_bytes=sum(r.new_bytes for r in results),
                         seconds=seconds, mbps=_mbps(nbytes, seconds)))
        run.log(f"store tree {version.name:<17} {rows[-1]['mbps']:9.1f} MB/s  "
                f"({rows[-1]['new_bytes'] / nbytes:6.1%} new)")
    return rows


def _seconds_first(result: tuple[T, float]) -> tuple[float, T]:
    return result[1], result[0]


def _restic(run: _Run, new_dir: Path, versions: list[Path]) -> dict:
    """restic backup/restore of the new data (``repeat`` times, each backup into a fresh repository),
    then backups of every version into the last repository (for dedup)."""
    nbytes = sum(p.stat().st_size for p in corpus.tree_files(new_dir))
    for attempt in range(run.config.repeat):
        if attempt:
            shutil.rmtree(run.work / "restic")
        repo = ResticRepo(run.work / "restic")
        snapshot = run.measure("restic_backup", nbytes, lambda: _seconds_first(repo.backup([new_dir])))
        run.measure("restic_restore", nbytes, lambda: (repo.restore(snapshot, run.work / "restic-restore"), None))
        shutil.rmtree(run.work / "restic-restore")
    for version in versions:
        repo.backup([version])
    return dict(version=repo.version(), raw_data_bytes=repo.raw_data_bytes(), repo_bytes=repo.repo_bytes())


def run_benchmark(config: BenchConfig, log: Callable[[str], None] = print) -> dict:
    """Run every step; returns the results (the JSON :func:`bench.common.publish` writes)."""
    with bench_session(log) as (session, endpoint, started), \
            tempfile.TemporaryDirectory(prefix="casstor-bench-") as tmp:
        work = Path(tmp)
        run = _Run(config, session, endpoint, work, log)
        log(f"generating the corpus (seed {run.seed}) in {work}")
        new_dir, tree_dir = work / "new", work / "tree"
        new = corpus.write_new_data(new_dir, config.new_bytes, config.new_files, run.seed)
        versions = corpus.write_versioned_tree(tree_dir, config.tree_versions, config.tree_files,
                                               config.tree_file_bytes, run.seed)
        tree_bytes = sum(p.stat().st_size for v in versions for p in corpus.tree_files(v))
        run.results.update(
            schema=1,
            run=dict(started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), seed=run.seed,
                     prefix=run.prefix, cpus=os.cpu_count(), endpoint=endpoint.description,
                     started_node=started, procs=config.procs, mb_bytes=MB,
                     protocol_version=session.cluster.protocol_version,
                     reactor=session.cluster.connection_class.__name__),
            config={k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()},
            sizes=dict(new_data_bytes=config.new_bytes, new_data_files=config.new_files,
                       tree_versions=config.tree_versions, tree_bytes=tree_bytes))
        try:
            for _ in range(max(2, config.repeat)):
                run.measure("chunk_hash_one_core", config.new_bytes,
                            lambda: (chunk_hash_seconds(new, run.settings, rounds=1), None))
            _raw_driver(run, new)
            new_written = _casstor(run, new, new_dir)
            tree_rows = _tree(run, versions, tree_dir)
            restic = _restic(run, new_dir, versions) if config.restic else None
        finally:
            run.cleanup()
        casstor_stored = sum(new_written) + sum(r["new_bytes"] for r in tree_rows)
        logical = config.new_bytes + tree_bytes
        dedup = dict(logical_bytes=logical, casstor_stored_bytes=casstor_stored,
                     casstor_dedup_ratio=logical / max(casstor_stored, 1))
        if restic:
            dedup.update(restic_version=restic["version"], restic_raw_data_bytes=restic["raw_data_bytes"],
                         restic_repo_bytes=restic["repo_bytes"],
                         restic_dedup_ratio=logical / max(restic["raw_data_bytes"], 1),
                         casstor_vs_restic_stored=casstor_stored / max(restic["raw_data_bytes"], 1))
        run.results.update(mbps=run.mbps, cpu_ms_per_mb=run.cpu_per_mb,
                           ratios=compute_ratios(run.mbps, config.procs, run.cpu_per_mb), tree_versions=tree_rows,
                           dedup=dedup)
        return run.results


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer")
    return int(text)


def _concurrencies(text: str) -> tuple[int, ...]:
    return tuple(_positive_int(t) for t in text.split(","))


def build_parser() -> argparse.ArgumentParser:
    d = BenchConfig()
    p = OneLineParser(prog="python -m bench.store_restore", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (tests, smoke runs); other size flags override")
    p.add_argument("--new-mib", type=_positive_int, help=f"new data, MiB (default {d.new_bytes // MIB})")
    p.add_argument("--new-files", type=_positive_int, help=f"new data files (default {d.new_files})")
    p.add_argument("--versions", type=_positive_int, help=f"versions of the tree (default {d.tree_versions})")
    p.add_argument("--tree-files", type=_positive_int, help=f"files per version (default {d.tree_files})")
    p.add_argument("--tree-file-mib", type=_positive_int,
                   help=f"MiB per tree file (default {d.tree_file_bytes // MIB})")
    p.add_argument("--concurrency", type=_concurrencies, help="raw driver sweep (under 64: libev reports ConnectionBusy past ~64 in flight)")
    p.add_argument("--procs", type=_positive_int, help=f"processes of the multi-process mode; 1 = off "
                                                       f"(default {d.procs}, the CPU count)")
    p.add_argument("--repeat", type=_positive_int, help=f"measurements per figure, the best counts "
                                                        f"(default {d.repeat}; --quick: 1)")
    p.add_argument("--no-restic", action="store_true", help="skip the restic comparison")
    p.add_argument("--seed", type=int, help="corpus seed (default: fresh per run)")
    p.add_argument("--keep", action="store_true", help="keep the bench's files in the store")
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default %(default)s)")
    return p


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    given = dict(new_bytes=args.new_mib and args.new_mib * MIB, new_files=args.new_files,
                 tree_versions=args.versions, tree_files=args.tree_files,
                 tree_file_bytes=args.tree_file_mib and args.tree_file_mib * MIB,
                 concurrencies=args.concurrency, procs=args.procs, repeat=args.repeat, seed=args.seed)
    overrides = {k: v for k, v in given.items() if v is not None}
    overrides.update(restic=not args.no_restic, keep=args.keep)
    return BenchConfig.quick(**overrides) if args.quick else BenchConfig(**overrides)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def bench() -> int:
        results = run_benchmark(config_from_args(args), log=lambda msg: print(msg, flush=True))
        return publish(results, format_report(results), args.output)

    return run_reporting_errors(bench)


if __name__ == "__main__":
    sys.exit(main())
