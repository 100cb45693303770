"""One writer lease shared by the server's writes, renewed every few seconds so an offline reclaim gets its turn.

A :class:`~casstor_ops.store.leases.WriterLease` costs a row write, a SERIAL
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
for one to be taken (it answers None instead).

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
import threading
import time
from collections.abc import Iterator

from cassandra import DriverException
from cassandra.cluster import NoHostAvailable, Session

from casstor_ops.store.leases import WriterLease

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
    """Writer leases lent to concurrent writes (see the module docstring); thread-safe."""

    def __init__(self, session: Session, reuse_s: float = DEFAULT_REUSE_S) -> None:
        self._session = session
        self._reuse_s = reuse_s
        self._lock = threading.Lock()
        self._current: _Lent | None = None
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
        (for a write on the event loop, which then goes to a worker thread instead)."""
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
            with self._lock:
                lent.holders -= 1
                if lent is not self._current and lent.holders == 0:
                    _give_up(lent)

    def _borrow(self, take: bool) -> _Lent | None:
        """The lease to lend, counted as held; None, without waiting, when ``take`` is false and none is fresh or
        another write is taking one."""
        # Taking a lease is a few round trips; under the lock, so concurrent writes take one, not one each.
        if not self._lock.acquire(blocking=take):
            return None
        try:
            if not self._fresh(self._current):
                if not take:
                    return None
                self._retire()
                self._current = _Lent(WriterLease(self._session, LEASE_KIND).__enter__())
            self._current.holders += 1
            return self._current
        finally:
            self._lock.release()

    def _retire(self) -> None:
        """Stop lending the current lease; give it up now unless a write still holds it (then the last one does)."""
        lent, self._current = self._current, None
        if lent is not None and lent.holders == 0:
            _give_up(lent)

    def _reap(self) -> None:
        while not self._stopping.wait(min(1.0, self._reuse_s / 2 or 0.1)):
            with self._lock:
                if self._current is not None and not self._fresh(self._current):
                    self._retire()

    def close(self) -> None:
        """Give up the lease (call when no write is running any more)."""
        self._stopping.set()
        self._reaper.join()
        with self._lock:
            self._retire()


def _give_up(lent: _Lent) -> None:
    """End a lease; a row that cannot be deleted expires with its TTL (its heartbeat is stopped first)."""
    try:
        lent.lease.__exit__(None, None, None)
    except (DriverException, NoHostAvailable) as err:
        log.warning("could not delete the writer lease row (it expires with its TTL): %s", " ".join(str(err).split()))
