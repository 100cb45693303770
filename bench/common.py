"""What every benchmark shares: the cluster session, quiet nodes, the chunk+hash floor, units, publishing.

* :func:`bench_session`: a session on the environment's cluster
  (:func:`casstor_ops.cluster.connection.endpoint_from_env`); an embedded
  node that is down is started for the bench and stopped at the end, and
  an uninitialised store is initialised;
* :func:`wait_for_quiet_nodes`: every measurement starts when no node has
  run a compaction for a second, so none pays for the writes before it;
* :func:`chunk_hash_seconds`: one core reading, chunking and hashing files,
  no Cassandra: the CPU floor of a duplicate store;
* :data:`MB` (10^6 bytes, the unit of every MB/s) and :data:`MIB`;
* :func:`live_bytes`: the bytes on disk of a keyspace (or some of its tables) on the local nodes, after a flush;
* :class:`ClientRequests`: the client requests the nodes have served so far (every CQL message);
* :func:`same_tree`: a restored directory holds exactly its source's files, byte for byte;
* :func:`random_files`: incompressible files of fresh random bytes, the large-file corpus nothing dedups;
* :func:`own_node`: point the bench and the ``casstor`` commands it runs at a throw-away node;
* :func:`publish`: print the report, write the results as JSON.

Example::

    >>> with bench_session(print) as (session, endpoint, started):      # doctest: +SKIP
    ...     wait_for_quiet_nodes(session)
    ...     seconds = chunk_hash_seconds(paths, read_settings(session))
    >>> publish(results, format_report(results), Path("bench/results/x.json"))  # doctest: +SKIP

Failures: an unreachable cluster raises
:class:`~casstor_ops.errors.CasstorError` from :func:`bench_session` (a
node it started is stopped again); :func:`wait_for_quiet_nodes` gives up
silently after its timeout (a busy node only slows the measurement);
:func:`same_tree` raises :class:`~casstor_ops.errors.CasstorError` naming
the first file that is missing, extra or different; :func:`publish` raises ``OSError`` if the JSON cannot be written.
"""

from __future__ import annotations

import contextlib
import filecmp
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cassandra.cluster import Session

from casstor_ops.cluster.connection import Endpoint, connect, endpoint_from_env
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.schema import StoreSettings, init_store, read_settings

MB = 1_000_000
MIB = 1 << 20
QUIET_TIMEOUT_S = 300.0


@contextlib.contextmanager
def bench_session(log: Callable[[str], None]) -> Iterator[tuple[Session, Endpoint, bool]]:
    """A session on the environment's cluster, the endpoint, and whether the bench started the local node.

    Example::

        >>> with bench_session(print) as (session, endpoint, started):   # doctest: +SKIP
        ...     session.execute("SELECT now() FROM system.local")

    Failures: see the module docstring.
    """
    endpoint = endpoint_from_env()
    local = LocalCluster() if endpoint.embedded else None
    started = local is not None and not local.is_up()
    if started:
        log("the local node is not running: starting it for the bench (it is stopped at the end)")
        local.start(log=log)
    try:
        session = connect(endpoint, start=False)
        try:
            if read_settings(session) is None:
                init_store(session)
            yield session, endpoint, started
        finally:
            session.cluster.shutdown()
    finally:
        if started:
            local.stop(log=log)


def wait_for_quiet_nodes(session: Session, timeout_s: float = QUIET_TIMEOUT_S) -> None:
    """Return once no node has run a compaction (or other SSTable task) for a second; give up after ``timeout_s``.

    Example::

        >>> wait_for_quiet_nodes(session)         # doctest: +SKIP
    """
    tasks = session.prepare("SELECT kind FROM system_views.sstable_tasks")
    deadline = time.monotonic() + timeout_s
    quiet_polls = 0
    while quiet_polls < 2 and time.monotonic() < deadline:
        hosts = [h for h in session.cluster.metadata.all_hosts() if h.is_up]
        busy = any(session.execute(tasks, host=host).one() for host in hosts)  # virtual tables are per node
        quiet_polls = 0 if busy else quiet_polls + 1
        time.sleep(0.5)


def chunk_hash_seconds(paths: list[Path], settings: StoreSettings, rounds: int = 2) -> float:
    """Seconds to read, chunk and hash ``paths`` on one core (best of ``rounds``): a duplicate store's ceiling.

    Example::

        >>> chunk_hash_seconds(paths, read_settings(session))   # doctest: +SKIP
        0.41

    Failures: an unreadable file raises ``OSError``.
    """
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for path in paths:
            for chunk in chunks(path, settings):
                block_hash(chunk)
        best = min(best, time.perf_counter() - start)
    return best


def live_bytes(cluster: LocalCluster, *names: str) -> int:
    """Bytes of the live SSTables of ``names`` (keyspaces, or ``keyspace.table``) on every up node, memtables
    flushed first: two nodetool runs a node, whatever the names (a flush of every keyspace, where a flush a
    keyspace took a nodetool run, ~2 s, each)."""
    total = 0
    for status in cluster.status():
        if status.state == "up":
            cluster.nodetool("flush", node=status.index)
            out = cluster.nodetool("tablestats", *names, node=status.index)
            total += sum(int(line.split(":")[1]) for line in out.splitlines() if "Space used (live)" in line)
    return total


class ClientRequests:
    """Counts the client requests every up node has completed since it started: the native transport's completed
    tasks (``system_views.thread_pools``), one per CQL message (queries, batches, prepares, a connection's
    start-up). A count includes the count before it, not itself.

    Example::

        >>> count = ClientRequests(session)   # doctest: +SKIP
        >>> before = count()                  # doctest: +SKIP
        >>> count() - before - 1              # doctest: +SKIP
        0
    """

    def __init__(self, session: Session) -> None:
        self._session = session
        self._tasks = session.prepare("SELECT completed_tasks FROM system_views.thread_pools WHERE name = ?")

    def __call__(self) -> int:
        hosts = [h for h in self._session.cluster.metadata.all_hosts() if h.is_up]
        return sum(self._session.execute(self._tasks, ("Native-Transport-Requests",), host=host).one()[0]
                   for host in hosts)  # virtual tables are per node


def _files_below(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def same_tree(source: Path, restored: Path, who: str) -> None:
    """Raise unless ``restored`` holds exactly the files below ``source``, each with its bytes.

    Example::

        >>> same_tree(Path("corpus"), Path("out"), "borg")   # doctest: +SKIP
        Traceback (most recent call last):
        CasstorError: borg restored numpy/version.py with different bytes
    """
    wanted, found = _files_below(source), _files_below(restored) if restored.is_dir() else set()
    for name, problem in ((wanted - found, "did not restore"), (found - wanted, "restored an extra file")):
        if name:
            raise CasstorError(f"{who} {problem} {min(name)} (of {len(wanted)} files)")
    for name in sorted(wanted):
        if not filecmp.cmp(source / name, restored / name, shallow=False):
            raise CasstorError(f"{who} restored {name} with different bytes")


def random_files(directory: Path, total_mb: int, count: int) -> list[Path]:
    """``count`` files of fresh :func:`os.urandom` bytes, ``total_mb`` MiB in all, written to ``directory`` (made
    if missing) as ``random-N.bin``; their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"random-{n}.bin" for n in range(count)]
    for path in paths:
        path.write_bytes(os.urandom(total_mb * (1 << 20) // count))
    return paths


def own_node(home: Path, port_base: int) -> None:
    """Point this process (and the casstor commands it runs) at a throw-away embedded node: ``home`` as
    ``CASSTOR_HOME``, CQL, storage and JMX on ``port_base`` + 0, 1, 2."""
    os.environ.pop("CASSTOR_NODES", None)
    os.environ.update(CASSTOR_HOME=str(home), CASSTOR_CQL_PORT=str(port_base),
                      CASSTOR_STORAGE_PORT=str(port_base + 1), CASSTOR_JMX_PORT=str(port_base + 2))


def median_figures(runs: list[dict]) -> dict:
    """Each figure's median over ``runs`` (dicts of the same keys), to 2 decimals; a figure None in the first run
    (a node CPU of nodes not local) stays None.

    Example::

        >>> median_figures([{"per_s": 3.0, "node_ms": None}, {"per_s": 1.0, "node_ms": None}, {"per_s": 2.5,
        ...                 "node_ms": None}])
        {'per_s': 2.5, 'node_ms': None}
    """
    return {key: None if runs[0][key] is None else round(statistics.median(run[key] for run in runs), 2)
            for key in runs[0]}


def publish(results: dict, report: str, path: Path) -> int:
    """Print a benchmark's report, save its results as JSON at ``path`` (parents created); the exit status (0).

    Example::

        >>> publish({"ratio": 1.2}, "ratio 1.20", Path("bench/results/x.json"))   # doctest: +SKIP
        ratio 1.20
        results written to bench/results/x.json
    """
    print(report)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results written to {path}")
    return 0


def run_and_publish(run: Callable[[Callable[[str], None]], dict], report: Callable[[dict], str], path: Path) -> int:
    """Run a benchmark, ``run(log)`` (its progress logged to stderr), then :func:`publish` its results with
    ``report(results)``; the exit status.

    Example::

        >>> run_and_publish(lambda log: run_benchmark(100, log=log), format_report, args.output)  # doctest: +SKIP

    Failures: a CasstorError (or another error the project reports) is one line on stderr and a non-zero status.
    """
    def bench() -> int:
        results = run(lambda msg: print(msg, file=sys.stderr, flush=True))
        return publish(results, report(results), path)

    return run_reporting_errors(bench)
