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

With ``whole_tree=True`` the client is this process and every process
below it, with what their exited children used (a SparkSession's JVM and
its Python workers run as such descendants, whose CPU ``getrusage`` counts
only once they exit).

``compiler_s`` is the part of ``node_s`` the nodes' JIT compiler threads
took (HotSpot's ``C1``/``C2 CompilerThread``): a node just started spends
about half its CPU there through its first small-tree stores (51 % and
47 % in the third and fourth), so a figure measured then is as much the
compiler's as the store's. :func:`settle` runs a bench's rounds until that
share is under :data:`SETTLED_SHARE`.

Failures: a node pid that vanished counts as no CPU (the node's own
failure surfaces in the measurement itself).
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")
# A node is settled once its JIT compiler threads took under this share of its CPU in one round: a user's node is a
# long-running server, whose hot paths were compiled long ago (bench.small_files, bench.serve).
SETTLED_SHARE = 0.10


@dataclass
class Cost:
    """CPU seconds of one measurement; ``node_s`` is None when the nodes are not local."""

    client_s: float = 0.0
    node_s: float | None = None
    server_s: float | None = None
    compiler_s: float | None = None

    @classmethod
    def of(cls, figures: Mapping[str, float | None]) -> "Cost":
        """The node's and its compiler's CPU seconds a bench kept in a run's figures (``node_s``, ``compiler_s``)."""
        return cls(node_s=figures["node_s"], compiler_s=figures["compiler_s"])

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


def _stat_fields(pid: int, thread: str = "") -> list[str] | None:
    try:
        with open(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()  # after "(comm)", which may hold spaces
    except OSError:
        return None


def _process_s(pid: int, thread: str = "") -> float:
    fields = _stat_fields(pid, thread)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def _compiler_s(pid: int) -> float:
    """CPU seconds of ``pid``'s JIT compiler threads (their names start ``C1 Compiler``/``C2 Compiler``)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    total = 0.0
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/comm") as comm:
                compiler = comm.read().startswith(("C1 Compiler", "C2 Compiler"))
        except OSError:
            continue  # the thread ended between the listing and the read
        if compiler:
            total += _process_s(pid, thread)
    return total


def process_tree(root: int | None = None) -> list[int]:
    """``root`` (default: this process) and its live descendants, e.g. a server and its worker processes.

    Walks every process's parent pid: a thread other than the main one may have started a child
    (a JVM's Python workers), which ``/proc/<pid>/task/<pid>/children`` would miss.
    """
    root = root or os.getpid()
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat_fields(int(entry))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))  # fields[1]: the parent pid
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def tree_s(root: int | None = None) -> float:
    """CPU seconds of ``root`` (default: this process) and its live descendants, each with its waited-for
    children's (cutime, cstime)."""
    total = 0
    for pid in process_tree(root):
        fields = _stat_fields(pid)
        if fields is not None:
            total += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return total / _TICKS


class CpuMeter:
    """Measures the client's CPU (``whole_tree``: with its live descendants), the CPU of ``node_pids`` (empty:
    nodes not local) and of ``server_pids``."""

    def __init__(self, node_pids: list[int], server_pids: list[int] | None = None, whole_tree: bool = False) -> None:
        self._pids = node_pids
        self._server_pids = server_pids
        self._client = tree_s if whole_tree else _client_s

    def _node_s(self) -> float | None:
        return sum(_process_s(p) for p in self._pids) if self._pids else None

    def _compiler_s(self) -> float | None:
        return sum(_compiler_s(p) for p in self._pids) if self._pids else None

    def _server_s(self) -> float | None:
        return None if self._server_pids is None else sum(_process_s(p) for p in self._server_pids)

    @contextlib.contextmanager
    def measure(self) -> Iterator[Cost]:
        cost = Cost()
        # The node is read before and after the walk of its threads, so the compiler's window lies inside the
        # node's; the walk lies outside the client's window.
        node = self._node_s()
        compiler = self._compiler_s()
        client, server = self._client(), self._server_s()
        yield cost
        cost.client_s = self._client() - client
        if node is not None:
            compiler = self._compiler_s() - compiler
            cost.node_s = self._node_s() - node
            # HotSpot may end a compiler thread beyond the first of each kind, and its CPU with it: never below 0.
            # The kernel rounds each thread's ticks apart from the process's, so their sum may pass the node's
            # (a CI run of a 1-second step had a share above 1): never above the node's.
            cost.compiler_s = min(cost.node_s, max(0.0, compiler))
        if server is not None:
            cost.server_s = self._server_s() - server


def compiler_share(costs: Iterable[Cost]) -> float:
    """The share of the nodes' CPU their JIT compiler threads took over ``costs`` together (0 when the nodes are not
    local or took no CPU).

    Example::

        >>> compiler_share([Cost(node_s=3.0, compiler_s=1.0), Cost(node_s=1.0, compiler_s=0.0)])
        0.25
        >>> compiler_share([Cost()]), compiler_share([Cost.of({"node_s": 2.0, "compiler_s": 0.5})])
        (0.0, 0.25)
    """
    node_s = compiler_s = 0.0
    for cost in costs:
        node_s += cost.node_s or 0.0
        compiler_s += cost.compiler_s or 0.0
    return compiler_s / node_s if node_s else 0.0


def settle(one_round: Callable[[], float], most: int, log: Callable[[str], None]) -> list[float]:
    """Run ``one_round`` (it returns the share of its nodes' CPU their compiler threads took in it) until a round's
    share is under :data:`SETTLED_SHARE`, at most ``most`` times; each round's share, in order.

    Example::

        >>> shares = iter([0.4, 0.2, 0.05, 0.01])
        >>> settle(lambda: next(shares), 8, lambda line: None)
        [0.4, 0.2, 0.05]
        >>> settle(lambda: 0.5, 2, lambda line: None), settle(lambda: 0.5, 0, lambda line: None)
        ([0.5, 0.5], [])
    """
    shares: list[float] = []
    while len(shares) < most and (not shares or shares[-1] >= SETTLED_SHARE):
        log(f"  settling round {len(shares) + 1} (at most {most})")
        shares.append(one_round())
        log(f"    the node's compiler took {100 * shares[-1]:.0f} % of its CPU")
    return shares
