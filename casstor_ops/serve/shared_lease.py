"""One writer lease shared by the server's writes, renewed every few seconds so that an offline reclaim can start.

A :class:`~casstor_ops.store.coordination.leases.WriterLease` costs a row write, a SERIAL
read of the reclaim window (a Paxos round) and a heartbeat thread: too much
for every PUT. :class:`SharedLease` takes one on the first write and lends it
to every PUT and DELETE that starts within ``reuse_s`` of its taking (any
number at once; the store's fence before each head write is the lease's own,
so a lapse stops them all). A write that starts later takes a fresh lease,
which reads the window again; the old one is given up when its last writer
finishes, and an idle lease is given up by a reaper thread once ``reuse_s``
has passed. So an offline reclaim, which opens the window and waits until
no lease is left, waits at most ``reuse_s`` plus the longest write in
progress, and writes that start after that are refused (503). The reuse
only ever shortens what a lease protects, never lengthens it: each lease is
still a full writer lease with its heartbeat and fence. A write on the event
loop borrows one with :meth:`SharedLease.hold_if_fresh`, which never waits
for one to be taken (it answers None instead), and gives it back without
waiting either: a lease is given up (its heartbeat joined, its row deleted,
which with a frozen node takes the driver's request timeout) on the reaper
thread only, never on the thread of the write that held it last.

Example::

    >>> leases = SharedLease(session, reuse_s=10)             # doctest: +SKIP
    >>> with leases.hold() as lease:                          # doctest: +SKIP
    ...     store.put(reader, "a.bin", lease=lease)
    >>> leases.close()                                        # doctest: +SKIP

Failures: a lease row that cannot be deleted is logged (one line) and left
to expire with its TTL; :meth:`SharedLease.hold` raises
:class:`~casstor_ops.errors.MaintenanceError` inside an offline reclaim
window (from the new lease), or the driver's error if the lease row cannot
be written; the lease in use is kept for the writes that hold it.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Iterator

from cassandra import DriverException
from cassandra.cluster import NoHostAvailable, Session

from casstor_ops.store.coordination.leases import WriterLease

log = logging.getLogger("casstor.serve")

LEASE_KIND = "serve"
DEFAULT_REUSE_S = 10.0


class _Lent:
    """A lease, when it was taken, and how many writes hold it."""

    def __init__(self, lease: WriterLease) -> None:
        self.lease = lease
        self.taken = time.monotonic()
        self.holders = 0


class SharedLease:
    """Writer leases lent to concurrent writes (see the module docstring); thread-safe.

    Two locks: ``_taking`` is held while a lease is taken (round trips to the node), so concurrent writes take
    one, not one each; ``_state`` guards which lease is current and its holders, and is never held across a
    request to the node. So a write ending on the event loop waits for neither: it counts itself out under
    ``_state``, and a lease to give up (a heartbeat to join, a row to delete) goes to the reaper thread.
    """

    def __init__(self, session: Session, reuse_s: float = DEFAULT_REUSE_S) -> None:
        self._session = session
        self._reuse_s = reuse_s
        self._taking = threading.Lock()
        self._state = threading.Lock()
        self._current: _Lent | None = None
        self._retired: queue.SimpleQueue[_Lent | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="casstor-serve-lease", daemon=True)
        self._reaper.start()

    def _fresh(self, lent: _Lent | None) -> bool:
        return lent is not None and time.monotonic() - lent.taken < self._reuse_s

    @contextlib.contextmanager
    def hold(self) -> Iterator[WriterLease]:
        """A live writer lease for one write (taken now if the current one is too old or there is none)."""
        with self._lend(take=True) as lease:
            yield lease

    @contextlib.contextmanager
    def hold_if_fresh(self) -> Iterator[WriterLease | None]:
        """The current lease for one write if it may still be lent, else None; never waits for one to be taken
        nor given up (for a write on the event loop, which then goes to a worker thread instead)."""
        with self._lend(take=False) as lease:
            yield lease

    @contextlib.contextmanager
    def _lend(self, take: bool) -> Iterator[WriterLease | None]:
        lent = self._borrow(take)
        if lent is None:
            yield None
            return
        try:
            yield lent.lease
        finally:
            with self._state:
                lent.holders -= 1
                done = lent is not self._current and lent.holders == 0
            if done:
                self._retired.put(lent)

    def _lend_fresh(self) -> _Lent | None:
        """The current lease counted as held if it is fresh, else None (call with ``_state`` held)."""
        if not self._fresh(self._current):
            return None
        self._current.holders += 1
        return self._current

    def _borrow(self, take: bool) -> _Lent | None:
        """The lease to lend, counted as held; None, without waiting, when ``take`` is false and none is fresh."""
        with self._state:
            lent = self._lend_fresh()
        if lent is not None or not take:
            return lent
        with self._taking:
            with self._state:
                lent = self._lend_fresh()  # another write took one while this one waited
            if lent is not None:
                return lent
            fresh = _Lent(WriterLease(self._session, LEASE_KIND).__enter__())
            with self._state:
                self._retire()
                fresh.holders = 1
                self._current = fresh
            return fresh

    def _retire(self) -> None:
        """Stop lending the current lease; have it given up unless a write still holds it (then the last one does).
        Call with ``_state`` held."""
        lent, self._current = self._current, None
        if lent is not None and lent.holders == 0:
            self._retired.put(lent)

    def _reap(self) -> None:
        """Give up retired leases as they come; retire the current one once it is no longer fresh."""
        while not self._stopping.is_set():
            try:
                lent = self._retired.get(timeout=min(1.0, self._reuse_s / 2 or 0.1))
            except queue.Empty:
                lent = None
            if lent is not None:
                _give_up(lent)
            with self._state:
                if self._current is not None and not self._fresh(self._current):
                    self._retire()

    def close(self) -> None:
        """Give up the leases (call when no write is running any more)."""
        self._stopping.set()
        self._retired.put(None)  # wakes the reaper
        self._reaper.join()
        with self._state:
            self._retire()
        while not self._retired.empty():
            lent = self._retired.get()
            if lent is not None:
                _give_up(lent)


def _give_up(lent: _Lent) -> None:
    """End a lease; a row that cannot be deleted expires with its TTL (its heartbeat is stopped first)."""
    try:
        lent.lease.__exit__(None, None, None)
    except (DriverException, NoHostAvailable) as err:
        log.warning("could not delete the writer lease row (it expires with its TTL): %s", " ".join(str(err).split()))
