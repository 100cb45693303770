"""The reclaim window and the writer leases that let reclaim wait for writers.

Offline reclaim needs a window with no writes. It is a cluster-wide flag
(row ``name='reclaim'`` of ``casstor_meta.maintenance``) taken with a
lightweight transaction, so two reclaims can never both hold it. Every
writer (store, rm, ingest task) holds a :class:`WriterLease` while it
writes: a row in ``writer_leases`` with a TTL, refreshed by a heartbeat, so
a writer that dies stops blocking reclaim after ``LEASE_TTL_S``.

Ordering argument: a writer *first* registers its lease, *then* reads the
flag (SERIAL, so it sees any committed LWT); reclaim *first* sets the flag,
*then* waits for the lease table to be empty. Either the writer sees the
flag (and withdraws), or reclaim sees the lease (and waits for it).

Example::

    >>> with WriterLease(session, "store"):      # doctest: +SKIP
    ...     pass                                  # writes go here
    >>> open_window(session, holder="reclaim@host", mode="offline")  # doctest: +SKIP

Raises :class:`~casstor_ops.errors.MaintenanceError` when a writer starts
inside a window, or a second window is requested.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from cassandra import ConsistencyLevel
from cassandra.cluster import Session

from .errors import CasstorError, MaintenanceError
from .schema import META_KS

WINDOW = "reclaim"
LEASE_TTL_S = 60
HEARTBEAT_S = 15


@dataclass(frozen=True)
class Window:
    holder: str
    mode: str
    state: str
    since: datetime | None


def current_window(session: Session) -> Window | None:
    """The open reclaim window, read at SERIAL so an LWT that just committed is seen."""
    stmt = session.prepare(f"SELECT holder, mode, state, since FROM {META_KS}.maintenance WHERE name = ?")
    stmt.consistency_level = ConsistencyLevel.SERIAL
    row = session.execute(stmt, (WINDOW,)).one()
    return Window(row.holder, row.mode, row.state, row.since) if row else None


def _refuse(window: Window) -> MaintenanceError:
    return MaintenanceError(
        f"the store is in a reclaim window (held by {window.holder} since {window.since:%Y-%m-%d %H:%M:%S} UTC, "
        f"state {window.state}): writes are refused until it ends; if that reclaim crashed, resume it with "
        f"'spark-submit jobs/reclaim.py' or clear it with 'spark-submit jobs/reclaim.py --clear-window'")


class WriterLease:
    """A registered writer; refuses to start inside a reclaim window."""

    def __init__(self, session: Session, kind: str) -> None:
        self._session = session
        self.kind = kind
        self.writer = uuid.uuid4()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._insert = session.prepare(
            f"INSERT INTO {META_KS}.writer_leases (writer, kind, host, started_at) VALUES (?, ?, ?, ?) "
            f"USING TTL {LEASE_TTL_S}")
        self._started = datetime.now(timezone.utc)

    def _register(self) -> None:
        self._session.execute(self._insert, (self.writer, self.kind, socket.gethostname(), self._started))

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._register()
            except Exception:  # a missed beat is retried; the TTL covers a few
                continue

    def __enter__(self) -> "WriterLease":
        self._register()
        window = current_window(self._session)
        if window is not None:
            self._release()
            raise _refuse(window)
        self._thread = threading.Thread(target=self._heartbeat, name="casstor-lease", daemon=True)
        self._thread.start()
        return self

    def _release(self) -> None:
        self._session.execute(self._session.prepare(
            f"DELETE FROM {META_KS}.writer_leases WHERE writer = ?"), (self.writer,))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._release()


def open_window(session: Session, holder: str, mode: str) -> Window:
    """Take the reclaim window with an LWT; refuses if anyone holds it."""
    stmt = session.prepare(
        f"INSERT INTO {META_KS}.maintenance (name, holder, mode, state, since) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS")
    now = datetime.now(timezone.utc)
    result = session.execute(stmt, (WINDOW, holder, mode, "waiting-for-writers", now))
    if not result.was_applied:
        existing = current_window(session)
        if existing is not None:
            raise _refuse(existing)
    return Window(holder, mode, "waiting-for-writers", now)


def set_window_state(session: Session, holder: str, state: str) -> None:
    result = session.execute(session.prepare(
        f"UPDATE {META_KS}.maintenance SET state = ? WHERE name = ? IF holder = ?"), (state, WINDOW, holder))
    if not result.was_applied:
        raise CasstorError(f"the reclaim window is no longer held by {holder}")


def close_window(session: Session, holder: str | None = None) -> bool:
    """End the window (only if ``holder`` holds it, when given); True if one was closed."""
    if holder is None:
        result = session.execute(session.prepare(f"DELETE FROM {META_KS}.maintenance WHERE name = ? IF EXISTS"),
                                 (WINDOW,))
    else:
        result = session.execute(session.prepare(
            f"DELETE FROM {META_KS}.maintenance WHERE name = ? IF holder = ?"), (WINDOW, holder))
    return bool(result.was_applied)


def active_writers(session: Session) -> int:
    return sum(1 for _ in session.execute(f"SELECT writer FROM {META_KS}.writer_leases"))


def wait_for_writers(session: Session, timeout_s: float, poll_s: float = 1.0) -> None:
    """Block until no writer lease is left; raise after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (count := active_writers(session)) > 0:
        if time.monotonic() > deadline:
            raise CasstorError(f"{count} writer(s) still running after {timeout_s:.0f} s; the window stays open")
        time.sleep(poll_s)
