"""The reclaim window and the writer leases that let reclaim wait for writers.

Reclaim holds a cluster-wide window: row ``name='reclaim'`` of
``casstor_meta.maintenance``, taken with a lightweight transaction, so two
reclaims can never run at once. An *offline* window also stops writers; an
*online* one only excludes other reclaims (online reclaim is safe beside
writers, see :mod:`casstor_ops.reclaim`).

Every writer (store, rm, ingest task) holds a :class:`WriterLease` while it
writes: a row in ``writer_leases`` with a TTL, refreshed by a heartbeat, so
a writer that dies stops blocking reclaim after ``LEASE_TTL_S``.

Ordering argument: a writer *first* registers its lease, *then* reads the
flag (SERIAL, so it sees any committed LWT); reclaim *first* sets the flag,
*then* waits for the lease table to be empty. Either the writer sees the
flag (and withdraws), or reclaim sees the lease (and waits for it).

A running reclaim also refreshes a TTL heartbeat row (``name='reclaim.alive'``).
A window without a live heartbeat was left by a reclaim that crashed: a new
reclaim resumes it (:class:`ReclaimWindow`), ``--clear-window`` clears it
(:func:`clear_window`); while the heartbeat lives both refuse.

Example::

    >>> with WriterLease(session, "store"):      # doctest: +SKIP
    ...     pass                                  # writes go here
    >>> with ReclaimWindow(session, "offline") as window:  # doctest: +SKIP
    ...     wait_for_writers(session, timeout_s=3600)
    ...     window.set_state("sweeping")

Raises :class:`~casstor_ops.errors.MaintenanceError` (exit 5) when a writer
starts inside an offline window, or a window is requested while a live
reclaim holds one.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from cassandra import ConsistencyLevel
from cassandra.cluster import Session

from .errors import CasstorError, MaintenanceError
from .schema import META_KS

WINDOW = "reclaim"
ALIVE = "reclaim.alive"
OFFLINE = "offline"
ONLINE = "online"
LEASE_TTL_S = 60
HEARTBEAT_S = 15
RESUME_HINT = ("re-run 'spark-submit jobs/reclaim.py' to resume it, or clear it with "
               "'spark-submit jobs/reclaim.py --clear-window'")


@dataclass(frozen=True)
class Window:
    holder: str
    mode: str
    state: str
    since: datetime | None

    def describe(self) -> str:
        since = f"{self.since:%Y-%m-%d %H:%M:%S} UTC" if self.since else "an unknown time"
        return f"{self.mode} reclaim window held by {self.holder} since {since} (state {self.state})"


class _Heartbeat:
    """Calls ``beat`` every ``HEARTBEAT_S`` in a daemon thread until stopped."""

    def __init__(self, beat: Callable[[], None], name: str) -> None:
        self._beat = beat
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._beat()
            except Exception:  # a missed beat is retried; the TTL covers a few
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _read(session: Session, name: str) -> Window | None:
    # SERIAL: an LWT that just committed is seen.
    stmt = session.prepare(f"SELECT holder, mode, state, since FROM {META_KS}.maintenance WHERE name = ?")
    stmt.consistency_level = ConsistencyLevel.SERIAL
    row = session.execute(stmt, (name,)).one()
    return Window(row.holder, row.mode, row.state, row.since) if row else None


def current_window(session: Session) -> Window | None:
    """The open reclaim window, or None."""
    return _read(session, WINDOW)


def holder_alive(session: Session, window: Window) -> bool:
    """Whether the reclaim holding ``window`` still refreshes its heartbeat."""
    alive = _read(session, ALIVE)
    return alive is not None and alive.holder == window.holder


def _refuse_writer(window: Window) -> MaintenanceError:
    return MaintenanceError(
        f"writes are refused during the {window.describe()}; wait for it to end. If that reclaim crashed, "
        f"{RESUME_HINT}")


class WriterLease:
    """A registered writer; refuses to start inside an offline reclaim window."""

    def __init__(self, session: Session, kind: str) -> None:
        self._session = session
        self.kind = kind
        self.writer = uuid.uuid4()
        self._heartbeat: _Heartbeat | None = None
        self._insert = session.prepare(
            f"INSERT INTO {META_KS}.writer_leases (writer, kind, host, started_at) VALUES (?, ?, ?, ?) "
            f"USING TTL {LEASE_TTL_S}")
        self._started = datetime.now(timezone.utc)

    def _register(self) -> None:
        self._session.execute(self._insert, (self.writer, self.kind, socket.gethostname(), self._started))

    def __enter__(self) -> "WriterLease":
        self._register()
        window = current_window(self._session)
        if window is not None and window.mode != ONLINE:
            self._release()
            raise _refuse_writer(window)
        self._heartbeat = _Heartbeat(self._register, "casstor-lease")
        return self

    def _release(self) -> None:
        self._session.execute(self._session.prepare(
            f"DELETE FROM {META_KS}.writer_leases WHERE writer = ?"), (self.writer,))

    def __exit__(self, *exc: object) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        self._release()


def open_window(session: Session, holder: str, mode: str) -> Window:
    """Take the reclaim window with an LWT; refuses if anyone holds it."""
    stmt = session.prepare(
        f"INSERT INTO {META_KS}.maintenance (name, holder, mode, state, since) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS")
    now = datetime.now(timezone.utc)
    result = session.execute(stmt, (WINDOW, holder, mode, "opened", now))
    if not result.was_applied:
        existing = current_window(session)
        if existing is not None:
            raise MaintenanceError(f"another reclaim holds the store: {existing.describe()}")
        return open_window(session, holder, mode)  # it closed between our LWT and our read
    return Window(holder, mode, "opened", now)


def set_window_state(session: Session, holder: str, state: str) -> None:
    result = session.execute(session.prepare(
        f"UPDATE {META_KS}.maintenance SET state = ? WHERE name = ? IF holder = ?"), (state, WINDOW, holder))
    if not result.was_applied:
        raise CasstorError(f"the reclaim window is no longer held by {holder} (was it cleared with --clear-window?)")


def close_window(session: Session, holder: str | None = None) -> bool:
    """End the window (only if ``holder`` holds it, when given); True if one was closed."""
    if holder is None:
        result = session.execute(session.prepare(f"DELETE FROM {META_KS}.maintenance WHERE name = ? IF EXISTS"),
                                 (WINDOW,))
    else:
        result = session.execute(session.prepare(
            f"DELETE FROM {META_KS}.maintenance WHERE name = ? IF holder = ?"), (WINDOW, holder))
    return bool(result.was_applied)


def clear_window(session: Session) -> Window | None:
    """Clear a window left by a crashed reclaim; returns it (None if there was none).

    Refuses (MaintenanceError) while the reclaim holding it is alive.
    """
    window = current_window(session)
    if window is None:
        return None
    if holder_alive(session, window):
        raise MaintenanceError(f"the {window.describe()} belongs to a running reclaim (its heartbeat is "
                               f"fresh); stop that reclaim first, or wait {LEASE_TTL_S} s if it was killed")
    close_window(session, window.holder)
    return window


class ReclaimWindow:
    """Holds the reclaim window (taking it, or resuming one whose holder died) with a heartbeat.

    On a clean exit the window closes. On an exception it stays open
    (offline: writers stay stopped, as the sweep may be half done) and the
    heartbeat is withdrawn, so the next reclaim resumes at once.
    ``resumed`` is the crashed window this one took over, if any.
    """

    def __init__(self, session: Session, mode: str) -> None:
        self._session = session
        self.mode = mode
        self.holder = f"reclaim@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.resumed: Window | None = None
        self._heartbeat: _Heartbeat | None = None
        self._alive = session.prepare(
            f"INSERT INTO {META_KS}.maintenance (name, holder, since) VALUES (?, ?, ?) USING TTL {LEASE_TTL_S}")

    def _beat(self) -> None:
        self._session.execute(self._alive, (ALIVE, self.holder, datetime.now(timezone.utc)))

    def _take_over(self, crashed: Window) -> None:
        result = self._session.execute(self._session.prepare(
            f"UPDATE {META_KS}.maintenance SET holder = ?, mode = ?, since = ? WHERE name = ? IF holder = ?"),
            (self.holder, self.mode, datetime.now(timezone.utc), WINDOW, crashed.holder))
        if not result.was_applied:
            raise MaintenanceError("another reclaim took over the crashed reclaim window first")
        self.resumed = crashed

    def __enter__(self) -> "ReclaimWindow":
        existing = current_window(self._session)
        if existing is None:
            open_window(self._session, self.holder, self.mode)
        elif holder_alive(self._session, existing):
            raise MaintenanceError(f"another reclaim is running: {existing.describe()}")
        else:
            self._take_over(existing)
        self._beat()
        self._heartbeat = _Heartbeat(self._beat, "casstor-reclaim-window")
        return self

    def set_state(self, state: str) -> None:
        set_window_state(self._session, self.holder, state)

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        # A plain delete, like the heartbeat's writes: an LWT's timestamp need not order after them.
        self._session.execute(self._session.prepare(f"DELETE FROM {META_KS}.maintenance WHERE name = ?"), (ALIVE,))
        if exc_type is None:
            close_window(self._session, self.holder)


def active_writers(session: Session) -> int:
    return sum(1 for _ in session.execute(f"SELECT writer FROM {META_KS}.writer_leases"))


def wait_for_writers(session: Session, timeout_s: float, poll_s: float = 1.0,
                     log: Callable[[str], None] = lambda msg: None) -> None:
    """Block until no writer lease is left; raise after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    announced = False
    while (count := active_writers(session)) > 0:
        if not announced:
            log(f"waiting for {count} running writer(s) to finish")
            announced = True
        if time.monotonic() > deadline:
            raise MaintenanceError(f"{count} writer(s) still running after {timeout_s:.0f} s; the reclaim window "
                                   f"stays open: {RESUME_HINT}")
        time.sleep(poll_s)
