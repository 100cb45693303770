"""A tree of thousands of small real files, release tarballs and random data: casstor against restic and borg.

Three corpora, each one directory, copied or written into a temp dir once per run:

* *small*: the installed files of a fixed set of Python packages, copied
  from the running interpreter's site-packages without ``__pycache__``
  (:data:`PACKAGES`: pandas, numpy, matplotlib, fontTools, botocore, PIL,
  IPython; ~5,600 files, ~140 MB, most of them under 24 KB); their versions
  are in the results;
* *tars*: consecutive Django 5.0.x releases as uncompressed tars
  (:mod:`bench.source_corpus`, as :mod:`bench.compression` uses; default 4,
  ~60 MB each);
* *random*: large files of fresh random bytes (``--random-mb``, default
  :data:`RANDOM_MB` in :data:`RANDOM_FILES` files; 0 leaves it out), where
  nothing compresses or dedups: issue 29's other large-file workload.

Per corpus, each tool on a fresh store or repository runs three timed steps:
*store* (``casstor store DIR PREFIX``; ``restic backup DIR``; ``borg create
--compression zstd,3``), *restore* (``casstor restore PREFIX/ OUT``;
``restic restore``; ``borg extract``) and *rerun*, the store of the unchanged
tree again. casstor runs as a user runs it: the CLI as a subprocess, default
options (``--quiet``: no progress bar). The tools alternate within each
round (casstor, restic, borg), ``--rounds`` rounds (default 3); every figure
is the median of the rounds. Warm-up rounds come first (``--warmup``,
default :data:`WARMUP_ROUNDS`, up to :data:`MAX_WARMUP`), their ratios
reported apart: a node just started spends much of its CPU compiling (its
C2 compiler took 51 % and 47 % of it in the third and fourth small-tree
stores after a start, 8 % in the seventh), and a user's node is a
long-running server. Then casstor's steps alone run again (*settling
rounds*, ``--settle``, default :data:`SETTLE_ROUNDS`) until the node's
compiler threads took under :data:`bench.cpu.SETTLED_SHARE` of its CPU in one round;
how many ran, and the share in each, are in the results. The share of the
node's CPU its JIT compiler threads took in casstor's measured steps is
printed with the figures, so a figure of a node still compiling shows as
such. Each step starts on quiet nodes
(:func:`~bench.common.wait_for_quiet_nodes`). Every restore is compared byte
for byte with its source (:func:`~bench.common.same_tree`).

Per step and tool: seconds, MB/s, files/s, CPU ms per file of the client
(this process and its exited children: the casstor, restic and borg
commands) and of the node (``/proc/<pid>/stat``, :mod:`bench.cpu`), and
client requests per file (the node's native-transport requests over the step,
:class:`~bench.common.ClientRequests`: one per CQL message, a command's
connection start-up included; ~0 for restic and borg). Bytes on disk after the
rerun: casstor's two keyspaces' live SSTables after ``nodetool flush``
(:func:`~bench.common.live_bytes`, as :mod:`bench.compression` measures),
each peer's repository directory.

Ratios: per step, the faster peer's seconds / casstor's (> 1: casstor is
faster); bytes on disk, casstor's / the smaller peer's (< 1: casstor is
smaller), and casstor's / restic's (``disk_restic``: issue 29 asks for at
most restic's bytes).

The bench runs its own throw-away node (a temporary ``CASSTOR_HOME`` on
ports ``--port-base`` + 0/1/2), so emptying the store never touches a
user's data; the node is stopped at the end.

Example::

    $ .venv/bin/python -m bench.small_files                 # ~5,600 files, 4 tars, 64 MiB random, medians of 3
    $ .venv/bin/python -m bench.small_files --quick         # IPython and PIL (~300 files), 1 tar, 16 MiB random
    $ .venv/bin/python -m bench.small_files --tree DIR --tars DIR2 --rounds 1

Failures: restic or borg missing and not installable, a package not
installed, the Django releases unavailable, a step that fails, or a
restore that differs from its source end the run with one line (exit 1);
bad flags exit 2.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from casstor_ops.cli.args import OneLineParser, bounded, positive_int
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS

from bench.borg import BorgRepo
from bench.common import (MB, bench_session, ClientRequests, live_bytes, own_node, publish, random_files,
                          same_tree, wait_for_quiet_nodes)
from bench.compression import CASSTOR, compile_casstor, empty_store, run_commands
from bench.cpu import SETTLED_SHARE, Cost, CpuMeter, compiler_share, settle as settle_node
from bench.restic import ResticRepo
from bench.source_corpus import release_tars

PACKAGES = ("pandas", "numpy", "matplotlib", "fontTools", "botocore", "PIL", "IPython")
QUICK_PACKAGES = ("IPython", "PIL")
TOOLS = ("casstor", "restic", "borg")
PEERS = TOOLS[1:]
STEPS = ("store", "restore", "rerun")
MAX_WARMUP = 6
MAX_SETTLE = 16
# Rounds before the measured ones (issue 29's figures are of a warm local node). A node just started compiles
# through its first stores: with one round its JIT compiler took 43-55 % of the node's CPU in the measured small
# store (0.65-0.68 ms of node CPU a file, small store 0.425-0.439 of the faster peer), with four 24 % (0.38 ms,
# 0.571); each round adds about a minute (docs/benchmarks.md, sixteenth session).
WARMUP_ROUNDS = 4
# After them, casstor's own rounds until the node's compiler took under SETTLED_SHARE of its CPU in one, at most
# SETTLE_ROUNDS: with the four warm-up rounds alone the compiler still took 28 % of the node's CPU in the measured
# small stores and 30 % in their restores (2026-12-03), and on one node of ours it fell to 5-7 % only after some
# ten first stores of the small tree, the store 5.9 -> 5.3 s. The peers need no such rounds (nothing of theirs
# compiles), so these run casstor alone: ~12 s a round for the small tree, ~5 s for the tars.
SETTLE_ROUNDS = 8
# The random corpus: as bench.compression's (4 files of 16 MiB), so its figures against restic compare with
# that bench's; the three tools' steps on it took ~6 s a round (2026-12-04).
RANDOM_MB = 64
RANDOM_FILES = 4
QUICK_RANDOM_MB = 16


def package_tree(dest: Path, packages: tuple[str, ...]) -> dict[str, str]:
    """Copy each package's directory from site-packages to ``dest``/NAME (no ``__pycache__``); their versions."""
    dest.mkdir(parents=True)
    distributions = importlib.metadata.packages_distributions()
    versions = {}
    for name in packages:
        spec = importlib.util.find_spec(name)  # finds without importing
        if spec is None or not spec.submodule_search_locations:
            raise CasstorError(f"package {name} is not installed in {sys.prefix}")
        shutil.copytree(spec.submodule_search_locations[0], dest / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
        dist = distributions.get(name, [name])[0]
        versions[dist] = importlib.metadata.version(dist)
    return versions


class _Casstor:
    """casstor's three steps on the bench's store, as a user runs them."""

    def __init__(self, session, tree: Path, work: Path) -> None:
        self.session, self.tree, self.prefix = session, tree, f"bench-{tree.name}/"
        empty_store(session)

    def store(self) -> None:
        run_commands([[CASSTOR, "store", str(self.tree), self.prefix, "--quiet"]])

    rerun = store

    def restore(self, out: Path) -> Path:
        run_commands([[CASSTOR, "restore", self.prefix, str(out), "--quiet"]])
        return out

    def disk_bytes(self) -> int:
        return live_bytes(LocalCluster(), DATA_KS, META_KS)


class _Restic:
    def __init__(self, session, tree: Path, work: Path) -> None:
        shutil.rmtree(work / "restic", True)
        self.repo, self.tree, self.snapshot = ResticRepo(work / "restic"), tree, ""

    def store(self) -> None:
        self.snapshot = self.repo.backup([self.tree])[0]

    rerun = store  # restic reads the previous snapshot of the same paths as the parent: unchanged files are skipped

    def restore(self, out: Path) -> Path:
        self.repo.restore(self.snapshot, out)
        return out / str(self.tree.resolve()).lstrip("/")  # restic restores absolute paths below the target

    def disk_bytes(self) -> int:
        return self.repo.repo_bytes()


class _Borg:
    def __init__(self, session, tree: Path, work: Path) -> None:
        shutil.rmtree(work / "borg", True)
        self.repo, self.tree, self.archive = BorgRepo(work / "borg"), tree, ""

    def store(self) -> None:
        self.archive = self.repo.create(self.tree)

    rerun = store  # borg's files cache (in the repository's own BORG_BASE_DIR) skips unchanged files

    def restore(self, out: Path) -> Path:
        return self.repo.extract(self.archive, out)

    def disk_bytes(self) -> int:
        return self.repo.repo_bytes()


DRIVERS = {"casstor": _Casstor, "restic": _Restic, "borg": _Borg}


class _Rounds:
    """Every step of every tool on one corpus, each round's measurements kept by (tool, step)."""

    def __init__(self, session, work: Path, log: Callable[[str], None]) -> None:
        self.session, self.work, self.log = session, work, log
        self.requests = ClientRequests(session)
        self.cpu = CpuMeter([n.pid() for n in LocalCluster().nodes() if n.pid()])
        self.samples: dict[tuple[str, str], list[dict]] = {}
        self.disk: dict[str, list[int]] = {}
        self.versions: dict[str, str] = {}

    def _timed(self, tool: str, step: str, action: Callable[[], object]) -> object:
        wait_for_quiet_nodes(self.session)
        requests = self.requests()
        with self.cpu.measure() as cost:
            started = time.perf_counter()
            result = action()
            seconds = time.perf_counter() - started
        sample = {"seconds": seconds, "client_s": cost.client_s, "node_s": cost.node_s or 0.0,
                  "compiler_s": cost.compiler_s or 0.0,
                  "requests": self.requests() - requests - 1}  # less the first count's own request
        self.samples.setdefault((tool, step), []).append(sample)
        self.log(f"    {tool:<8} {step:<8} {seconds:7.2f} s  {sample['requests']:8d} requests")
        return result

    def compiler_share(self, tool: str) -> float:
        """The share of the node's CPU its compiler threads took in ``tool``'s steps of the last round."""
        return compiler_share(Cost.of(self.samples[(tool, step)][-1]) for step in STEPS)

    def one(self, tool: str, tree: Path) -> None:
        driver = DRIVERS[tool](self.session, tree, self.work)
        self._timed(tool, "store", driver.store)
        out = self.work / f"restore-{tool}"
        shutil.rmtree(out, True)
        same_tree(tree, self._timed(tool, "restore", lambda: driver.restore(out)), f"{tool} ({tree.name})")
        shutil.rmtree(out)
        self._timed(tool, "rerun", driver.rerun)
        self.disk.setdefault(tool, []).append(driver.disk_bytes())
        if tool in PEERS:
            self.versions[tool] = driver.repo.version()


def _medians(rounds: _Rounds, files: int, nbytes: int) -> dict:
    figures: dict = {}
    for (tool, step), samples in rounds.samples.items():
        seconds = statistics.median(s["seconds"] for s in samples)
        figures.setdefault(tool, {})[step] = {
            "seconds": seconds, "mbps": nbytes / MB / seconds, "files_per_s": files / seconds,
            "client_ms_per_file": 1000 * statistics.median(s["client_s"] for s in samples) / files,
            "node_ms_per_file": 1000 * statistics.median(s["node_s"] for s in samples) / files,
            "compiler_share": statistics.median(compiler_share([Cost.of(s)]) for s in samples),
            "requests_per_file": statistics.median(s["requests"] for s in samples) / files}
    for tool, sizes in rounds.disk.items():
        figures[tool]["disk_bytes"] = statistics.median(sizes)
    return figures


def _ratios(figures: dict) -> dict:
    ratios = {}
    for step in STEPS:
        peer = min(PEERS, key=lambda p: figures[p][step]["seconds"])
        ratios[step] = {"value": figures[peer][step]["seconds"] / figures["casstor"][step]["seconds"], "peer": peer}
    peer = min(PEERS, key=lambda p: figures[p]["disk_bytes"])
    ratios["disk"] = {"value": figures["casstor"]["disk_bytes"] / figures[peer]["disk_bytes"], "peer": peer}
    ratios["disk_restic"] = {"value": figures["casstor"]["disk_bytes"] / figures["restic"]["disk_bytes"],
                             "peer": "restic"}
    return ratios


def _settling_round(rounds: _Rounds, tree: Path) -> float:
    """casstor's steps alone once more; the share of its node's CPU the compiler took in them."""
    rounds.one("casstor", tree)
    return rounds.compiler_share("casstor")


def run_benchmark(corpora: dict[str, Path], rounds: int, log: Callable[[str], None] = print,
                  warmup: int = WARMUP_ROUNDS, settle: int = SETTLE_ROUNDS) -> dict:
    """Every step of every tool on each corpus directory, ``warmup`` rounds kept apart, casstor alone until its
    node's compiler settles (at most ``settle`` rounds), then ``rounds`` alternated rounds, on the environment's
    node; the results as a dict (see the module docstring). It empties the store: :func:`main` gives it a node of
    its own."""
    results: dict = {"rounds": rounds, "warmup": warmup, "settle": settle, "corpora": {}, "versions": {}}
    with tempfile.TemporaryDirectory(prefix="casstor-bench-small-files-") as tmp, \
            bench_session(log) as (session, _endpoint, _started):
        for corpus, tree in corpora.items():
            paths = [p for p in tree.rglob("*") if p.is_file()]
            files, nbytes = len(paths), sum(p.stat().st_size for p in paths)
            log(f"{corpus}: {files} files, {nbytes / MB:.1f} MB")
            warm, measured = _Rounds(session, Path(tmp), log), _Rounds(session, Path(tmp), log)
            for n in range(warmup):
                log(f"  warm-up round {n + 1} of {warmup}")
                for tool in TOOLS:
                    warm.one(tool, tree)
            shares = settle_node(partial(_settling_round, _Rounds(session, Path(tmp), log), tree), settle, log)
            for n in range(rounds):
                log(f"  round {n + 1} of {rounds}")
                for tool in TOOLS:
                    measured.one(tool, tree)
            results["versions"].update(measured.versions)
            figures = _medians(measured, files, nbytes)
            results["corpora"][corpus] = {"files": files, "bytes": nbytes, "figures": figures,
                                          "settling_compiler_shares": shares,
                                          "ratios": _ratios(figures),
                                          "warmup_ratios": _ratios(_medians(warm, files, nbytes)) if warmup else {}}
        empty_store(session)
    return results


def _report(results: dict) -> str:
    versions = results["versions"]
    lines = [f"small files, tarballs and random data, casstor vs restic {versions['restic']} and borg "
             f"{versions['borg']} (medians of {results['rounds']} alternated rounds after {results['warmup']} "
             f"warm-up and at most {results['settle']} settling rounds of casstor alone; one throw-away local node; "
             f"2 shared cores: node, client and peers compete)"]
    if results.get("packages"):
        lines.append("  small: " + ", ".join(f"{name} {v}" for name, v in results["packages"].items()))
    lines.append("ratios (speed: the faster peer's seconds / casstor's, > 1 is casstor faster; "
                 "disk: casstor / the smaller peer's bytes, < 1 is smaller; disk_restic: casstor / restic's):")
    for corpus, info in results["corpora"].items():
        lines.append(f"  {corpus}: {info['files']} files, {info['bytes'] / MB:.1f} MB")
        lines += [f"    {name:<11} {r['value']:6.3f}  (against {r['peer']})" for name, r in info["ratios"].items()]
        if info["warmup_ratios"]:
            lines.append("    warm-up rounds (not in the medians; the first on a node just started): " + ", ".join(
                f"{name} {r['value']:.3f}" for name, r in info["warmup_ratios"].items()))
        shares = info["settling_compiler_shares"]
        lines.append(f"    settling rounds, casstor alone: {len(shares)}" + (
            ", the node's compiler's share of its CPU in each: " + ", ".join(f"{100 * s:.0f} %" for s in shares)
            if shares else ""))
        lines.append("    the node's JIT compiler's share of its CPU in casstor's measured steps: " + ", ".join(
            f"{step} {100 * info['figures']['casstor'][step]['compiler_share']:.0f} %" for step in STEPS))
    lines.append("per step (medians): seconds, MB/s, files/s, CPU ms per file client / node, requests per file:")
    for corpus, info in results["corpora"].items():
        for tool, figures in info["figures"].items():
            lines += [f"  {corpus:<6} {step:<8} {tool:<8} {f['seconds']:7.2f} s {f['mbps']:7.1f} MB/s "
                      f"{f['files_per_s']:8.0f} files/s  {f['client_ms_per_file']:6.2f} / {f['node_ms_per_file']:6.2f} ms"
                      f"  {f['requests_per_file']:6.2f}"
                      for step, f in figures.items() if step in STEPS]
    lines.append("bytes on disk after the rerun:")
    lines += [f"  {corpus:<6} " + ", ".join(f"{tool} {f['disk_bytes'] / MB:.2f} MB" for tool, f in info["figures"].items())
              for corpus, info in results["corpora"].items()]
    return "\n".join(lines)


def _corpora(args, work: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """The corpus directories (copied below ``work``) and the small corpus's package versions."""
    corpora, packages = {}, {}
    if args.tree:
        corpora["small"] = args.tree.resolve()
    else:
        packages = package_tree(work / "site-packages", QUICK_PACKAGES if args.quick else PACKAGES)
        corpora["small"] = work / "site-packages"
    if args.tars:
        corpora["tars"] = args.tars.resolve()
    else:
        tars = release_tars(args.cache, "Django", [f"5.0.{n}" for n in range(1, args.versions + 1)])
        (work / "tars").mkdir()
        for tar in tars:
            shutil.copy2(tar, work / "tars")  # the tree holds exactly these files
        corpora["tars"] = work / "tars"
    if args.random_mb:
        corpora["random"] = work / "random"
        random_files(corpora["random"], args.random_mb, RANDOM_FILES)
    return corpora, packages


def main() -> None:
    parser = OneLineParser(prog="python -m bench.small_files", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="IPython and PIL, one Django release, one round")
    parser.add_argument("--tree", type=Path, help="a directory to use as the small-file corpus instead")
    parser.add_argument("--tars", type=Path, help="a directory to use as the tarball corpus instead")
    parser.add_argument("--versions", type=positive_int, default=4, help="consecutive Django 5.0.x releases (1-8)")
    parser.add_argument("--random-mb", type=bounded(int, 0, 4096, "0 to 4096 MiB"), default=RANDOM_MB,
                        help=f"MiB of random bytes in {RANDOM_FILES} files (default {RANDOM_MB}; 0: no random corpus)")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--warmup", type=int, choices=range(MAX_WARMUP + 1), metavar=f"0-{MAX_WARMUP}",
                        default=WARMUP_ROUNDS,
                        help=f"rounds run first and left out of the medians (default {WARMUP_ROUNDS})")
    parser.add_argument("--settle", type=int, choices=range(MAX_SETTLE + 1), metavar=f"0-{MAX_SETTLE}",
                        default=SETTLE_ROUNDS, help="casstor's rounds after them, at most, until its node's compiler "
                        f"took under {100 * SETTLED_SHARE:.0f} %% of the node's CPU in one (default {SETTLE_ROUNDS})")
    parser.add_argument("--port-base", type=positive_int, default=19642)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "casstor" / "corpus")
    parser.add_argument("--out", type=Path, default=Path("bench/results/small_files.json"))
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.versions, args.warmup, args.settle = 1, 1, 0, 0
        args.random_mb = min(args.random_mb, QUICK_RANDOM_MB)
    if args.versions > 8:
        parser.error("--versions takes 1-8")
    for flag, path in (("--tree", args.tree), ("--tars", args.tars)):
        if path and not path.is_dir():
            parser.error(f"{flag} {path}: not a directory")

    def body() -> int:
        with tempfile.TemporaryDirectory(prefix="casstor-bench-corpus-") as work, \
                tempfile.TemporaryDirectory(prefix="casstor-bench-node-") as home:
            corpora, packages = _corpora(args, Path(work))
            compile_casstor()
            own_node(Path(home), args.port_base)
            results = run_benchmark(corpora, args.rounds, warmup=args.warmup, settle=args.settle)
            results["packages"] = packages
        return publish(results, _report(results), args.out)

    sys.exit(run_reporting_errors(body))


if __name__ == "__main__":
    main()
