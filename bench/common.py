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
:func:`publish` raises ``OSError`` if the JSON cannot be written.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cassandra.cluster import Session

from casstor_ops.cluster.connection import Endpoint, connect, endpoint_from_env
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.store.chunking import chunks
from casstor_ops.store.hashing import block_hash
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


def live_bytes(cluster: LocalCluster, keyspace: str, *tables: str) -> int:
    """Bytes of the live SSTables of ``tables`` (default: all) of ``keyspace`` on every up node, memtables flushed
    first."""
    total = 0
    for status in cluster.status():
        if status.state == "up":
            cluster.nodetool("flush", keyspace, *tables, node=status.index)
            out = cluster.nodetool("tablestats", *([f"{keyspace}.{t}" for t in tables] or [keyspace]),
                                   node=status.index)
            total += sum(int(line.split(":")[1]) for line in out.splitlines() if "Space used (live)" in line)
    return total


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
