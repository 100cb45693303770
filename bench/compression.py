"""Compressed blocks against restic: store and restore speed, and bytes on disk, on source releases and random data.

Two corpora, each stored file by file with the CLI (one ``casstor store``
process per file, as a user's loop or a cron job runs it) and as one tree
(``casstor store DIR PREFIX``), against the same files backed up with
``restic backup`` file by file and as one directory, in the same run:

* *source*: consecutive releases of one large project as uncompressed tars
  (:mod:`bench.source_corpus`; default 4 Django 5.0.x sdists, ~60 MB each);
* *random*: incompressible files (:func:`os.urandom`), where compression
  can only cost.

casstor runs twice per corpus on an empty store: with ``--compression none``
(blocks as the code before compressed blocks stored them) and with the
default ``zstd:3`` (or ``--compression SPEC``). Each store loop starts on
quiet nodes; ``--repeat N`` empties the store and stores again N times, and
restores N times, keeping the best. Bytes on disk are the live SSTables of
both casstor keyspaces after a flush (``nodetool tablestats``; also per
table), against restic's repository directory. Every restore is compared
byte for byte with its source.

``--compare OLD.json`` prints, beside the run's own report, each figure
against the same figure of an earlier run's results (e.g. the code before a
change, run in the same session from a worktree): MB/s new / old, CPU per MB
new / old, bytes new / old.

The bench runs its own throw-away node (a temporary ``CASSTOR_HOME`` on
ports ``--port-base`` + 0/1/2), so emptying the store never touches a
user's data; the node is stopped at the end.

Example::

    $ .venv/bin/python -m bench.compression --versions 4 --random-mb 64
    $ PYTHONPATH=../main-worktree .venv/bin/python -m bench.compression --out /tmp/old.json   # the code before
    $ .venv/bin/python -m bench.compression --compare /tmp/old.json

Figures are ratios (casstor / restic MB/s; casstor / restic bytes; the
compressed mode / none, e.g. ``source_store_zstd:3_vs_none``) with client
and node CPU ms per MB beside them. ``--compression none`` is a usage
error (exit 2): it would be measured against itself. Failures: restic or
the corpus unavailable, or a restore that differs, end the run with one line
(exit 1).
"""

from __future__ import annotations

import compileall
import filecmp
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import casstor_ops
from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.store.blocks.codec import DEFAULT_COMPRESSION, BlockCodec
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import set_compression

from bench.common import MB, bench_session, live_bytes, own_node, publish, random_files, wait_for_quiet_nodes
from bench.cpu import CpuMeter
from bench.restic import ResticRepo
from bench.source_corpus import release_tars

CASSTOR = str(Path(sys.executable).with_name("casstor"))
MODES = ("none", DEFAULT_COMPRESSION)
TABLES = [(DATA_KS, "blocks"), (DATA_KS, "existing_blocks"), (DATA_KS, "block_claims"), (META_KS, "versions"),
          (META_KS, "dir_entries"), (META_KS, "directories"), (META_KS, "file_blocks"), (META_KS, "writer_leases")]
SPEEDS = ("store", "restore", "tree_store", "tree_restore")


def compile_casstor() -> None:
    """Bring the bytecode of casstor's modules up to date, as an installed package has it, before its commands are
    timed. ``make setup`` compiles them once; where PYTHONDONTWRITEBYTECODE is set (this project's machines), a
    module edited since then was compiled from source by every command: 19 modules in the twenty-fifth session's
    checkout, ~10 ms of each ``casstor`` command (the CLI imported in 0.16 s against 0.15), and 60 ms in a clone
    never compiled (0.21 s). borg's bytecode is compiled when Debian installs it."""
    compileall.compile_dir(Path(casstor_ops.__file__).parent, quiet=1)


def run_commands(commands: list[list[str]]) -> None:
    """Run each command in turn; the first that fails raises :class:`CasstorError` with its last output."""
    for command in commands:
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CasstorError(f"{' '.join(command[:2])} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")


class _Run:
    """Timed loops of one bench run: best seconds and CPU per MB by name."""

    def __init__(self, session, repeat: int, log: Callable[[str], None]) -> None:
        self.session, self.repeat, self.log = session, repeat, log
        self.cpu = CpuMeter([n.pid() for n in LocalCluster().nodes() if n.pid()])
        self.figures: dict[str, dict] = {}

    def measure(self, name: str, nbytes: int, before: Callable[[], None], loop: Callable[[], None]) -> None:
        best = None
        for _ in range(self.repeat):
            before()
            wait_for_quiet_nodes(self.session)
            with self.cpu.measure() as cost:
                started = time.perf_counter()
                loop()
                seconds = time.perf_counter() - started
            if best is None or seconds < best[0]:
                best = (seconds, cost.per_mb(nbytes))
        self.figures[name] = {"mbps": nbytes / MB / best[0], "seconds": best[0], **best[1]}
        self.log(f"  {name:<28} {self.figures[name]['mbps']:7.1f} MB/s  "
                 f"client {best[1]['client_ms_per_mb']:.1f} ms/MB, node {best[1]['node_ms_per_mb']:.1f} ms/MB")


def empty_store(session) -> None:
    """Truncate every table of the store but its settings."""
    for keyspace, table in TABLES:
        session.execute(f"TRUNCATE {keyspace}.{table}")


def _casstor(run: _Run, corpus: str, files: list[Path], work: Path, mode: str) -> dict:
    nbytes = sum(f.stat().st_size for f in files)
    ids = [f"{corpus}/{f.name}" for f in files]
    set_compression(run.session, mode)
    tree_out = work / f"tree-restore-{corpus}-{mode}"
    run.measure(f"{corpus}_{mode}_tree_store", nbytes, lambda: empty_store(run.session),
                lambda: run_commands([[CASSTOR, "store", str(files[0].parent), f"tree-{corpus}/", "--quiet"]]))
    run.measure(f"{corpus}_{mode}_tree_restore", nbytes, lambda: shutil.rmtree(tree_out, True),
                lambda: run_commands([[CASSTOR, "restore", f"tree-{corpus}/", str(tree_out), "--quiet"]]))
    _check_restored(files, tree_out, f"casstor ({mode}, tree)")
    run.measure(f"{corpus}_{mode}_store", nbytes, lambda: empty_store(run.session),
                lambda: run_commands([[CASSTOR, "store", str(f), i, "--quiet"] for f, i in zip(files, ids)]))
    tables = {f"{keyspace}.{table}": live_bytes(LocalCluster(), f"{keyspace}.{table}") for keyspace, table in TABLES}
    out = work / f"restore-{corpus}-{mode}"
    run.measure(f"{corpus}_{mode}_restore", nbytes, lambda: (shutil.rmtree(out, True), out.mkdir()),
                lambda: run_commands([[CASSTOR, "restore", i, str(out / f.name), "--quiet"] for f, i in zip(files, ids)]))
    _check_restored(files, out, f"casstor ({mode})")
    stats = subprocess.run([CASSTOR, "stats", "--json"], capture_output=True, text=True, check=True).stdout
    return {"disk_bytes": sum(tables.values()), "tables": tables, "stats": stats}


def _check_restored(files: list[Path], out: Path, who: str) -> None:
    """Every file restored under ``out`` (by name) has its source's bytes; ``out`` is removed."""
    for f in files:
        if not filecmp.cmp(f, out / f.name, shallow=False):
            raise CasstorError(f"{who} restored {f.name} with different bytes")
    shutil.rmtree(out)


def _restic(run: _Run, corpus: str, files: list[Path], work: Path) -> dict:
    nbytes = sum(f.stat().st_size for f in files)
    state: dict = {}

    def fresh_repo() -> None:
        shutil.rmtree(work / "restic", True)
        state["repo"] = ResticRepo(work / "restic")

    def backups() -> None:
        state["snapshots"] = [state["repo"].backup([f])[0] for f in files]

    def tree_backup() -> None:
        state["tree"] = state["repo"].backup([files[0].parent])[0]

    tree_out = work / f"tree-restore-{corpus}-restic"
    run.measure(f"{corpus}_restic_tree_store", nbytes, fresh_repo, tree_backup)
    run.measure(f"{corpus}_restic_tree_restore", nbytes, lambda: shutil.rmtree(tree_out, True),
                lambda: state["repo"].restore(state["tree"], tree_out))
    _check_restored(files, tree_out / str(files[0].parent.resolve()).lstrip("/"), "restic (tree)")
    shutil.rmtree(tree_out)
    run.measure(f"{corpus}_restic_store", nbytes, fresh_repo, backups)
    out = work / f"restore-{corpus}-restic"
    run.measure(f"{corpus}_restic_restore", nbytes, lambda: shutil.rmtree(out, True),
                lambda: [state["repo"].restore(s, out) for s in state["snapshots"]])
    _check_restored(files, out / str(files[0].parent.resolve()).lstrip("/"), "restic")
    shutil.rmtree(out)
    return {"repo_bytes": state["repo"].repo_bytes(), "version": state["repo"].version()}


def _ratios(figures: dict, disk: dict, modes: tuple[str, str]) -> dict:
    ratios = {}
    for corpus in ("source", "random"):
        for op in SPEEDS:
            restic = figures[f"{corpus}_restic_{op}"]["mbps"]
            for mode in modes:
                ratios[f"{corpus}_{op}_{mode}_vs_restic"] = figures[f"{corpus}_{mode}_{op}"]["mbps"] / restic
            ratios[f"{corpus}_{op}_{modes[1]}_vs_none"] = (figures[f"{corpus}_{modes[1]}_{op}"]["mbps"]
                                                           / figures[f"{corpus}_none_{op}"]["mbps"])
        for mode in modes:
            ratios[f"{corpus}_disk_{mode}_vs_restic"] = disk[corpus][mode]["disk_bytes"] / disk[corpus]["restic"]
    return ratios


def compare(new: dict, old: dict) -> str:
    """Each casstor figure of ``new`` against the same figure of ``old`` (an earlier run's results): MB/s,
    client and node CPU per MB and bytes on disk, each as new / old (speed > 1 is faster, CPU and bytes < 1 are
    less). Figures only one of the runs has are left out."""
    lines = ["against the earlier run (new / old: MB/s, client CPU per MB, node CPU per MB):"]
    for name, figure in new["figures"].items():
        before = old["figures"].get(name)
        if before and "restic" not in name:
            lines.append(f"  {name:<28} {figure['mbps'] / before['mbps']:6.3f}  "
                         f"{figure['client_ms_per_mb'] / before['client_ms_per_mb']:6.3f}  "
                         f"{(figure['node_ms_per_mb'] or 0) / (before['node_ms_per_mb'] or 1):6.3f}")
    lines.append("bytes on disk, new / old:")
    for corpus, modes in new["disk"].items():
        for mode, found in modes.items():
            before = old["disk"].get(corpus, {}).get(mode)
            if mode != "restic" and before:
                lines.append(f"  {corpus} {mode:<10} {found['disk_bytes'] / before['disk_bytes']:6.3f}")
    return "\n".join(lines)


def _report(results: dict) -> str:
    lines = [f"compressed blocks vs restic {results['restic_version']} (per-file CLI loops; best of "
             f"{results['repeat']}; one throw-away local node; 2 shared cores: node and client compete)"]
    for corpus, info in results["corpora"].items():
        lines.append(f"  {corpus}: {info['files']} files, {info['bytes'] / MB:.1f} MB")
    lines.append("ratios (speed: casstor MB/s / restic MB/s, >= 1 is faster; disk: casstor / restic bytes, "
                 "<= 1 is smaller):")
    lines += [f"  {name:<36} {value:6.3f}" for name, value in results["ratios"].items()]
    lines.append("CPU ms per MB (client incl. child processes / node):")
    lines += [f"  {name:<28} {f['client_ms_per_mb']:7.1f} / {f['node_ms_per_mb'] or 0:7.1f}   ({f['mbps']:.1f} MB/s)"
              for name, f in results["figures"].items()]
    lines.append("bytes on disk by table (per-file store):")
    lines += [f"  {corpus} {mode:<8} " + ", ".join(f"{table} {size}" for table, size in found["tables"].items())
              for corpus, modes in results["disk"].items() for mode, found in modes.items() if mode != "restic"]
    return "\n".join(lines)


def run_benchmark(source: list[Path], random_mb: int, random_file_count: int, repeat: int,
                  log: Callable[[str], None] = print, compression: str = DEFAULT_COMPRESSION) -> dict:
    """Every loop above on the environment's node, ``source`` as the source corpus, ``none`` against
    ``compression``; the results as a dict (see the module docstring). It empties the store: :func:`main` gives it
    a node of its own."""
    modes = ("none", compression)
    with tempfile.TemporaryDirectory(prefix="casstor-bench-compression-") as tmp:
        work = Path(tmp)
        # Each corpus alone in a directory of its own: the tree commands store exactly its files.
        (work / "source").mkdir()
        corpora = {"source": [Path(shutil.copy2(f, work / "source")) for f in source],
                   "random": random_files(work / "random", random_mb, random_file_count)}
        with bench_session(log) as (session, _endpoint, _started):
            run = _Run(session, repeat, log)
            disk: dict = {}
            restic_version = ""
            for corpus, files in corpora.items():
                log(f"{corpus}: {len(files)} files")
                disk[corpus] = {mode: _casstor(run, corpus, files, work, mode) for mode in modes}
                restic = _restic(run, corpus, files, work)
                disk[corpus]["restic"], restic_version = restic["repo_bytes"], restic["version"]
            set_compression(session, DEFAULT_COMPRESSION)
        return {"repeat": repeat, "restic_version": restic_version, "figures": run.figures, "disk": disk,
                "corpora": {c: {"files": len(f), "bytes": sum(p.stat().st_size for p in f)} for c, f in corpora.items()},
                "ratios": _ratios(run.figures, disk, modes), "compression": compression}


def main() -> None:
    parser = OneLineParser(prog="python -m bench.compression", description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=4, help="consecutive Django 5.0.x releases (1-8)")
    parser.add_argument("--source", type=Path, help="a directory whose files are the source corpus instead")
    parser.add_argument("--random-mb", type=int, default=64)
    parser.add_argument("--random-files", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--port-base", type=int, default=19542)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "casstor" / "corpus")
    parser.add_argument("--compression", default=DEFAULT_COMPRESSION,
                        help="the compressed mode (zstd:LEVEL), against none")
    parser.add_argument("--compare", type=Path, help="an earlier run's results (JSON): print each figure against it")
    parser.add_argument("--out", type=Path, default=Path("bench/results/compression.json"))
    args = parser.parse_args()
    if not 1 <= args.versions <= 8 or args.repeat < 1 or args.random_mb < 1 or args.random_files < 1:
        parser.error("--versions takes 1-8; --repeat, --random-mb and --random-files at least 1")
    try:
        args.compression = BlockCodec.parse(args.compression).spec  # "zstd" -> "zstd:3": one name per mode
    except CasstorError as err:
        parser.error(str(err))
    if args.compression == "none":
        parser.error("--compression none: give the compressed mode, which the bench measures against none")
    if args.compare and not args.compare.is_file():
        parser.error(f"--compare {args.compare}: no such file")

    def body() -> int:
        if args.source:
            source = sorted(p for p in args.source.iterdir() if p.is_file())
            if not source:
                raise CasstorError(f"--source {args.source}: no files")
        else:
            source = release_tars(args.cache, "Django", [f"5.0.{n}" for n in range(1, args.versions + 1)])
        earlier = json.loads(args.compare.read_text()) if args.compare else None
        compile_casstor()
        with tempfile.TemporaryDirectory(prefix="casstor-bench-node-") as home:
            own_node(Path(home), args.port_base)
            results = run_benchmark(source, args.random_mb, args.random_files, args.repeat,
                                    compression=args.compression)
        report = _report(results) + ("\n" + compare(results, earlier) if earlier else "")
        return publish(results, report, args.out)

    sys.exit(run_reporting_errors(body))


if __name__ == "__main__":
    main()
