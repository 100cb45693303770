"""CPU seconds a measurement cost: this process and its children (the client), a server, and the local nodes.

On a machine whose cores the client and the Cassandra nodes share, a
throughput ratio is bounded by the ratio of the CPU each side needs per
byte; recording both turns "not met" into "not possible here" or "room
left". Node CPU is read from ``/proc/<pid>/stat`` of the embedded local
cluster's nodes; for a remote cluster it is unknown (``None``). A server
the bench started (``casstor serve`` and its worker processes,
:func:`process_tree`) is measured the same way (``server_s``); the
client's figure counts only children that have exited (wrk, not the
running server).

Example::

    >>> meter = CpuMeter(node_pids=[1234])                    # doctest: +SKIP
    >>> with meter.measure() as cost:                         # doctest: +SKIP
    ...     store.put("big.bin", "big")
    >>> cost.client_s, cost.node_s                            # doctest: +SKIP
    (2.1, 6.0)

Failures: a node pid that vanished counts as no CPU (the node's own
failure surfaces in the measurement itself).
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Cost:
    """CPU seconds of one measurement; ``node_s`` is None when the nodes are not local."""

    client_s: float = 0.0
    node_s: float | None = None
    server_s: float | None = None

    def per_mb(self, nbytes: int) -> dict[str, float | None]:
        """CPU milliseconds per MB (10^6 bytes) moved (``server_ms_per_mb`` only when a server was measured)."""
        mb = nbytes / 1e6
        figures = {"client_ms_per_mb": 1000 * self.client_s / mb,
                   "node_ms_per_mb": None if self.node_s is None else 1000 * self.node_s / mb}
        if self.server_s is not None:
            figures["server_ms_per_mb"] = 1000 * self.server_s / mb
        return figures


def _client_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _process_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after "(comm)", which may hold spaces
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (e.g. a server and its worker processes), as they are now."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return [pid, *(p for child in children.read().split() for p in process_tree(int(child)))]
    except OSError:
        return [pid]


class CpuMeter:
    """Measures the client's CPU, the CPU of ``node_pids`` (empty: nodes not local) and of ``server_pids``."""

    def __init__(self, node_pids: list[int], server_pids: list[int] | None = None) -> None:
        self._pids = node_pids
        self._server_pids = server_pids

    def _node_s(self) -> float | None:
        return sum(_process_s(p) for p in self._pids) if self._pids else None

    def _server_s(self) -> float | None:
        return None if self._server_pids is None else sum(_process_s(p) for p in self._server_pids)

    @contextlib.contextmanager
    def measure(self) -> Iterator[Cost]:
        cost = Cost()
        client, node, server = _client_s(), self._node_s(), self._server_s()
        yield cost
        cost.client_s = _client_s() - client
        if node is not None:
            cost.node_s = self._node_s() - node
        if server is not None:
            cost.server_s = self._server_s() - server
