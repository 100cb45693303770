"""Clock skew between this host and every Cassandra node, read through CQL.

Online reclaim's timestamp proof (:mod:`casstor_ops.ops.reclaim`) assumes
that the clocks of the hosts writing to the store differ by at most ε:
the driver stamps every write with the client's clock. The nodes are the
hosts this one can compare itself with. :func:`read_clocks` asks each
node that is up for ``toUnixTimestamp(now())`` of ``system.local``, the
request bound to that host, between two readings of the local clock, so a
node's offset is known to within half the round trip plus the node's
millisecond resolution (:attr:`ClockReading.worst_s`).
:func:`clock_skew_refusal` is the decision, apart from the measurement.

Example::

    >>> check_clock_skew(session, bound_s=1.0)                    # doctest: +SKIP
    'clock skew to 3 node(s): at most 4 ms (bound 1000 ms)'
    >>> clock_skew_refusal([ClockReading("10.0.0.1", 100.0, 102.5, 100.01)], 1.0)  # doctest: +ELLIPSIS
    "online reclaim refused: node 10.0.0.1's clock is +2.495 s from this host's (±0.006 s), ..."

Failures: :func:`check_clock_skew` raises
:class:`~casstor_ops.errors.CasstorError` (exit 1, one line) when some
node's clock may differ from this host's by more than the bound, or when
no node is up to be read; a node that is up but does not answer raises
the driver's error (a failed request, exit 1) after a few tries. Nodes
that are down are not read (and named in the summary).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable, Session
from cassandra.pool import Host

from casstor_ops.errors import CasstorError
from casstor_ops.store.cql.statements import Statements

NODE_RESOLUTION_S = 0.001  # toUnixTimestamp(now()) counts milliseconds
# 0.5 + 1 + 2 + 4 s between five tries: longer than the driver's first reconnections (0.5 s, then doubling).
CLOCK_READ_ATTEMPTS = 5
CLOCK_READ_BACKOFF_S = 0.5


@dataclass(frozen=True)
class ClockReading:
    """One node's clock (``node``, seconds) read between two readings of the local clock."""

    host: str
    sent: float
    node: float
    received: float

    @property
    def offset_s(self) -> float:
        """The node's clock minus this host's, taking the node's reading at the middle of the round trip."""
        return self.node - (self.sent + self.received) / 2

    @property
    def uncertainty_s(self) -> float:
        return (self.received - self.sent) / 2 + NODE_RESOLUTION_S

    @property
    def worst_s(self) -> float:
        """The largest skew this reading allows (the node read its clock somewhere in the round trip)."""
        return abs(self.offset_s) + self.uncertainty_s


def read_clocks(session: Session, local_clock: Callable[[], float] = time.time) -> tuple[list[ClockReading], list[str]]:
    """The clock of every node that is up, and the addresses of those that are down.

    ``local_clock`` is this host's clock (seconds since the epoch).
    Example: ``read_clocks(session)`` -> ``([ClockReading("127.0.0.1", ...)], [])``.
    A node that is up but fails to answer :data:`CLOCK_READ_ATTEMPTS` times raises the driver's error.
    """
    statement = Statements.for_session(session).node_clock
    readings, down = [], []
    for host in session.cluster.metadata.all_hosts():
        reading = _read_node_clock(session, statement, host, local_clock)
        if reading is None:
            down.append(str(host.endpoint.address))
        else:
            readings.append(reading)
    return readings, down


def _read_node_clock(session: Session, statement: Any, host: Host, local_clock: Callable[[], float]
                     ) -> ClockReading | None:
    """``host``'s clock, or None when it is down; a request that cannot reach it is tried again a few times.

    A request bound to one host has no other host to fall back on, and the driver briefly has no connection
    pool for a host it still counts as up, while it replaces a connection it found defunct (seen on a loaded
    machine: "Host has been marked down or removed" in a Spark job's online reclaim).
    """
    tries = 0
    while host.is_up:
        sent = local_clock()
        try:
            node_ms = session.execute(statement, host=host).one().now_ms
        except (NoHostAvailable, OperationTimedOut):
            tries += 1
            if tries == CLOCK_READ_ATTEMPTS:
                raise
            time.sleep(CLOCK_READ_BACKOFF_S * 2 ** (tries - 1))
            continue
        return ClockReading(str(host.endpoint.address), sent, node_ms / 1000, local_clock())
    return None


def clock_skew_refusal(readings: list[ClockReading], bound_s: float) -> str | None:
    """Why online reclaim must not run with these readings (one line), or None when every node is within ``bound_s``.

    Example: a node 2.5 s ahead with a bound of 1 s is refused, naming the
    node, the offset and the bound; no reading at all is refused too.
    """
    if not readings:
        return "online reclaim refused: no node's clock could be read, so the clock skew is unknown; reclaim offline"
    worst = max(readings, key=lambda r: r.worst_s)
    if worst.worst_s <= bound_s:
        return None
    return (f"online reclaim refused: node {worst.host}'s clock is {worst.offset_s:+.3f} s from this host's "
            f"(±{worst.uncertainty_s:.3f} s), beyond the {bound_s:g} s the online protocol assumes; "
            f"synchronise the clocks (NTP) or reclaim offline")


def check_clock_skew(session: Session, bound_s: float, local_clock: Callable[[], float] = time.time) -> str:
    """Measure every node's clock against ``local_clock``; a one-line summary, or CasstorError beyond ``bound_s``."""
    readings, down = read_clocks(session, local_clock)
    refusal = clock_skew_refusal(readings, bound_s)
    if refusal is not None:
        raise CasstorError(refusal)
    worst_ms = max(r.worst_s for r in readings) * 1000
    unread = f"; not read (down): {', '.join(down)}" if down else ""
    return f"clock skew to {len(readings)} node(s): at most {worst_ms:.0f} ms (bound {bound_s * 1000:.0f} ms){unread}"
