"""Writer leases: TTL rows refreshed by a heartbeat, so reclaim can wait for running writers.

Every writer (store, rm, ingest task) holds a
:class:`WriterLease` while it writes: a row in ``writer_leases`` with the
lease TTL, refreshed every heartbeat period by a
:class:`~casstor_ops.store.coordination.heartbeat.Heartbeat` thread, so a writer that dies
stops blocking reclaim after the TTL. A running reclaim refreshes its own
liveness row with the same heartbeat (:mod:`casstor_ops.store.coordination.reclaim_window`),
and so does ``verify --repair-index``, which holds the window rather than a lease.

Ordering argument: a writer *first* registers its lease, *then* reads the
reclaim window (SERIAL, so it sees any committed LWT); reclaim *first* sets
the window, *then* waits for the lease table to be empty
(:func:`wait_for_writers`). Either the writer sees the window (and
withdraws), or reclaim sees the lease (and waits for it). That holds only
while the lease row exists: a writer paused or cut off for longer than the
TTL looks finished to reclaim, so it calls :meth:`WriterLease.fence` just
before its commit (the head write) and stops if the lease may have lapsed.

Example::

    >>> with WriterLease(session, "store") as lease:  # doctest: +SKIP
    ...     lease.fence("committing 'a.bin'")        # the head write goes right after
    >>> wait_for_writers(session, timeout_s=3600)      # doctest: +SKIP

Failures: :class:`~casstor_ops.errors.MaintenanceError` (exit 5) when a
writer starts inside an offline reclaim window (its lease is withdrawn
first), or when writers are still running after ``timeout_s``;
:class:`~casstor_ops.errors.LeaseLapsedError` (exit 11) from ``fence`` when
the lease may have expired. A missed heartbeat is retried at the next beat;
the TTL covers a few.
"""

from __future__ import annotations

import socket
import time
import uuid
from datetime import datetime, timezone
from typing import Callable

from cassandra.cluster import Session

from casstor_ops.errors import MaintenanceError
from casstor_ops.store.coordination.heartbeat import Heartbeat, LeaseHolder
from casstor_ops.store.coordination.reclaim_window import refuse_writers_in_offline_window
from casstor_ops.store.cql.statements import Statements

class WriterLease(LeaseHolder):
    """A registered writer; refuses to start inside an offline reclaim window."""

    def __init__(self, session: Session, kind: str) -> None:
        self._session = session
        self._st = Statements.for_session(session)
        self.kind = kind
        self.writer = uuid.uuid4()
        self._heartbeat: Heartbeat | None = None
        self._started = datetime.now(timezone.utc)

    def _register(self, ttl_s: int) -> None:
        self._session.execute(self._st.insert_lease,
                              (self.writer, self.kind, socket.gethostname(), self._started, ttl_s))

    def __enter__(self) -> "WriterLease":
        self._heartbeat = Heartbeat(self._register, "casstor-lease", f"the writer lease ({self.kind})",
                                    "nothing was committed; run it again")
        try:
            refuse_writers_in_offline_window(self._session)
        except MaintenanceError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        self._session.execute(self._st.delete_lease, (self.writer,))


def active_writers(session: Session) -> int:
    """The number of live writer leases."""
    return sum(1 for _ in session.execute(Statements.for_session(session).lease_writers))


def wait_for_writers(session: Session, timeout_s: float, poll_s: float = 1.0,
                     log: Callable[[str], None] = lambda msg: None) -> None:
    """Block until no writer lease is left; raise MaintenanceError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    announced = False
    while (count := active_writers(session)) > 0:
        if not announced:
            log(f"waiting for {count} running writer(s) to finish")
            announced = True
        if time.monotonic() > deadline:
            raise MaintenanceError(f"{count} writer(s) still running after {timeout_s:.0f} s")
        time.sleep(poll_s)
