"""A local Cassandra cluster of an experiment's own: its own home, free ports, stopped on the way out.

Experiments that compare node counts (notebook 03's node-count section,
``bench.cluster_scaling``) must never touch the user's node or store. They
start nodes through :class:`~casstor_ops.cluster.launcher.LocalCluster` in a
home of their own (a temporary directory unless one is given) on ports the
kernel reports free on every node address, and the ``with`` block stops
exactly those nodes (their pid files) however it ends: a failed cell or
benchmark step leaves no JVM behind.

Example::

    >>> with scratch_cluster(heap_mb=512) as scratch:     # doctest: +SKIP
    ...     scratch.grow(3)                               # nodes 1..3, one at a time
    ...     session = connect(scratch.endpoint(), start=False)

A process killed outright (SIGKILL, a Jupyter kernel shut down in the
middle of a cell, a test runner's timeout) runs no cleanup: its nodes
keep running under ``/tmp/casstor-scratch-*/``; stop them with
``CASSTOR_HOME=/tmp/casstor-scratch-XXXX casstor cluster stop``.

Failures: a node that does not start raises
:class:`~casstor_ops.errors.CasstorError` (the launcher's one line) and the
nodes already running are stopped; no free ports found raises
:class:`~casstor_ops.errors.CasstorError`.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from casstor_ops.cluster.connection import Endpoint
from casstor_ops.cluster.launcher import ClusterPorts, LocalCluster
from casstor_ops.errors import CasstorError

PORT_TRIES = 200


def _free_on(port: int, addresses: list[str]) -> bool:
    for address in addresses:
        with socket.socket() as sock:
            try:
                sock.bind((address, port))
            except OSError:
                return False
    return True


def _kernel_ports() -> Iterator[int]:
    """Ports the kernel reports free on 127.0.0.1 (from its ephemeral range), each released at once."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        yield port


def free_ports(max_nodes: int, candidates: Iterable[int] | None = None) -> ClusterPorts:
    """CQL and storage ports free on 127.0.0.1..``max_nodes``, and ``max_nodes`` consecutive free JMX ports, no
    two of them the same.

    ``candidates``: the ports to try, in order (default: the kernel's picks).
    Each port is released once checked, so an experiment started at the
    same moment could pick the same ones (unlikely from the kernel's picks;
    its node would then fail to start, one line).
    """
    addresses = [f"127.0.0.{i}" for i in range(1, max_nodes + 1)]
    found: list[int] = []
    for port in itertools.islice(_kernel_ports() if candidates is None else candidates, PORT_TRIES):
        span = range(port, port + (max_nodes if len(found) == 2 else 1))  # the JMX base: one port per node
        if not any(p in found for p in span) and all(_free_on(p, addresses) for p in span):
            found.append(port)
        if len(found) == 3:
            return ClusterPorts(cql=found[0], storage=found[1], jmx_base=found[2])
    raise CasstorError(f"no free ports for a {max_nodes}-node scratch cluster after {PORT_TRIES} tries")


@dataclass
class ScratchCluster:
    """The cluster of one :func:`scratch_cluster` block."""

    cluster: LocalCluster
    consistency: str
    log: Callable[[str], None]

    def grow(self, nodes: int) -> None:
        """Start nodes until there are ``nodes`` (the new ones join the ring, one at a time)."""
        self.cluster.start(nodes=nodes, log=self.log)

    @property
    def nodes(self) -> int:
        return self.cluster.node_count

    def endpoint(self) -> Endpoint:
        """The running nodes as an endpoint that never starts anything (not the embedded cluster)."""
        return Endpoint(tuple(self.cluster.contact_points), self.cluster.ports.cql, embedded=False,
                        consistency=self.consistency)

    def node_pids(self) -> list[int]:
        return [status.pid for status in self.cluster.status() if status.pid is not None]


@contextlib.contextmanager
def scratch_cluster(home: Path | str | None = None, heap_mb: int = 512, max_nodes: int = 3,
                    consistency: str = "QUORUM", log: Callable[[str], None] = print) -> Iterator[ScratchCluster]:
    """A cluster with no node yet (call :meth:`ScratchCluster.grow`), stopped when the block ends.

    ``home`` None: a temporary directory, deleted afterwards; a given
    ``home`` is kept (its node logs). ``max_nodes`` bounds the addresses
    whose ports are checked free.
    """
    root = Path(home) if home is not None else Path(tempfile.mkdtemp(prefix="casstor-scratch-"))
    try:
        cluster = LocalCluster(root / "cluster", ports=free_ports(max_nodes), heap_mb=heap_mb)
        try:
            yield ScratchCluster(cluster, consistency, log)
        finally:
            cluster.stop(log=log)
    finally:
        if home is None:
            shutil.rmtree(root, ignore_errors=True)
