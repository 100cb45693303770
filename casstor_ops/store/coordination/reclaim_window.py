"""The reclaim window: the cluster-wide flag that keeps two reclaims apart and, offline, stops writers.

Reclaim holds a cluster-wide window: row ``name='reclaim'`` of
``casstor_meta.maintenance``, taken with a lightweight transaction, so two
reclaims can never run at once. An *offline* window also stops writers
(:class:`~casstor_ops.store.coordination.leases.WriterLease` refuses to start, and reclaim
waits for the running ones); an *online* one only excludes other reclaims
(online reclaim is safe beside writers, see :mod:`casstor_ops.ops.reclaim`).
``verify --repair-index`` holds an online window too (:class:`RepairWindow`),
so that no reclaim deletes what it repairs, and ``casstor init`` an offline
one while it upgrades a store's schema (:class:`UpgradeWindow`), so that no
writer of the older schema writes what the upgrade has already copied.

A running reclaim also refreshes a TTL heartbeat row of its own
(``name='reclaim.alive:<holder>'``, a :class:`~casstor_ops.store.coordination.heartbeat.Heartbeat`).
A window without its holder's live heartbeat was left by a reclaim that
crashed: a new reclaim resumes it (:class:`ReclaimWindow`),
``--clear-window`` clears it (:func:`clear_window`); while the heartbeat
lives both refuse. One row per holder, so a reclaim that lapsed and was
taken over can neither revive nor delete its successor's heartbeat.

So the holder whose heartbeat lapsed may find its window taken over: it
calls :meth:`ReclaimWindow.fence` before each delete step, which raises
:class:`~casstor_ops.errors.LeaseLapsedError` unless its row surely lives on.

Example::

    >>> with ReclaimWindow(session, WindowMode.OFFLINE) as window:  # doctest: +SKIP
    ...     wait_for_writers(session, timeout_s=3600)
    ...     window.set_state(WindowState.DELETING_CONTENT)
    ...     window.fence("deleting block content")       # then delete
    >>> clear_window(session)                            # doctest: +SKIP

Failures: :class:`~casstor_ops.errors.MaintenanceError` (exit 5) when a
writer starts inside an offline window, or a window is requested (or
cleared) while a live reclaim holds one;
:class:`~casstor_ops.errors.CasstorError` when a holder records a state in a
window that was cleared under it;
:class:`~casstor_ops.errors.LeaseLapsedError` (exit 11) from ``fence`` once
the holder's heartbeat may have lapsed. A reclaim that fails keeps its
window open (see :class:`ReclaimWindow`).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import StrEnum

from cassandra.cluster import Session

from casstor_ops.errors import CasstorError, MaintenanceError
from casstor_ops.store.coordination.heartbeat import Heartbeat, LeaseHolder, lease_timing
from casstor_ops.store.cql.statements import Statements

WINDOW = "reclaim"
ALIVE = "reclaim.alive"


class WindowMode(StrEnum):
    """What a window excludes, stored as its value in ``maintenance.mode``: OFFLINE stops writers, ONLINE only
    other reclaims."""

    OFFLINE = "offline"
    ONLINE = "online"


class WindowState(StrEnum):
    """The holder's step, stored as its value in ``maintenance.state`` (a resumed reclaim reads it back)."""

    OPENED = "opened"
    WAITING_FOR_WRITERS = "waiting-for-writers"
    PLANNING = "planning"
    DELETING_INDEX = "deleting-index"
    WAITING_FOR_COMMITS = "waiting-for-commits"
    DELETING_CONTENT = "deleting-content"
    UPGRADING = "upgrading"  # casstor init's (UpgradeWindow): copying heads to the new schema


RESUME_HINT = ("re-run 'spark-submit jobs/reclaim.py' to resume it, or clear it with "
               "'spark-submit jobs/reclaim.py --clear-window'")


@dataclass(frozen=True)
class Window:
    holder: str
    mode: WindowMode
    state: str  # a WindowState's value, or a step an older casstor recorded (e.g. "sweeping") in a window it left
    since: datetime | None

    def describe(self) -> str:
        since = f"{self.since:%Y-%m-%d %H:%M:%S} UTC" if self.since else "an unknown time"
        return f"{self.mode} reclaim window held by {self.holder} since {since} (state {self.state})"


def _row(session: Session, name: str):
    return session.execute(Statements.for_session(session).window_row, (name,)).one()


def current_window(session: Session) -> Window | None:
    """The open reclaim window, or None."""
    row = _row(session, WINDOW)
    return Window(row.holder, WindowMode(row.mode), row.state, row.since) if row else None


def _alive_row(holder: str) -> str:
    return f"{ALIVE}:{holder}"


def holder_alive(session: Session, window: Window) -> bool:
    """Whether the reclaim holding ``window`` still refreshes its heartbeat."""
    return _row(session, _alive_row(window.holder)) is not None  # a heartbeat row: a holder, no mode


def refuse_writers_in_offline_window(session: Session) -> None:
    """Raise MaintenanceError if an offline window is open (a writer calls it after registering its lease)."""
    window = current_window(session)
    if window is not None and window.mode != WindowMode.ONLINE:
        raise MaintenanceError(
            f"writes are refused during the {window.describe()}; wait for it to end. If that reclaim crashed, "
            f"{RESUME_HINT}")


def open_window(session: Session, holder: str, mode: WindowMode) -> Window:
    """Take the reclaim window with an LWT; refuses if anyone holds it."""
    now = datetime.now(timezone.utc)
    result = session.execute(Statements.for_session(session).open_window,
                             (WINDOW, holder, mode, WindowState.OPENED, now))
    if not result.was_applied:
        existing = current_window(session)
        if existing is not None:
            raise MaintenanceError(f"another reclaim holds the store: {existing.describe()}")
        return open_window(session, holder, mode)  # it closed between our LWT and our read
    return Window(holder, mode, WindowState.OPENED, now)


def set_window_state(session: Session, holder: str, state: WindowState) -> None:
    """Record the reclaim's step in the window ``holder`` holds; CasstorError if it no longer does."""
    result = session.execute(Statements.for_session(session).set_window_state, (state, WINDOW, holder))
    if not result.was_applied:
        raise CasstorError(f"the reclaim window is no longer held by {holder} (was it cleared with --clear-window?)")


def close_window(session: Session, holder: str | None = None) -> bool:
    """End the window (only if ``holder`` holds it, when given); True if one was closed."""
    st = Statements.for_session(session)
    if holder is None:
        result = session.execute(st.close_any_window, (WINDOW,))
    else:
        result = session.execute(st.close_held_window, (WINDOW, holder))
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
                               f"fresh); stop that reclaim first, or wait {lease_timing().ttl_s} s if it was killed")
    close_window(session, window.holder)
    return window


@dataclass(frozen=True)
class WindowHold:
    """A held reclaim window, as a sweep sees it: its mode, a way to record its step, and its fence (raises
    LeaseLapsedError once the window's lease may have lapsed). Only :attr:`ReclaimWindow.hold` makes one, while
    the window is held: :func:`casstor_ops.ops.reclaim.execute` takes one, so no sweep runs outside a window."""

    mode: WindowMode
    set_state: Callable[[WindowState], None]
    fence: Callable[[str], None]


class ReclaimWindow(LeaseHolder):
    """Holds the reclaim window (taking it, or resuming one whose holder died) with a heartbeat.

    On a clean exit the window closes. On an exception it stays open
    (offline: writers stay stopped, as the sweep may be half done) and the
    heartbeat is withdrawn, so the next reclaim resumes at once.
    ``resumed`` is the crashed window this one took over, if any.
    """

    # A reclaim resumes a crashed window, and leaves its own for the next one to resume.
    resumable = True
    left_open_on_failure = True
    kind = "reclaim"
    lapse_advice = f"nothing more was deleted; unless another reclaim took the window over, {RESUME_HINT}"

    def __init__(self, session: Session, mode: WindowMode) -> None:
        self._session = session
        self._st = Statements.for_session(session)
        self.mode = mode
        self.holder = f"{self.kind}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.resumed: Window | None = None
        self._heartbeat: Heartbeat | None = None

    def _beat(self, ttl_s: int) -> None:
        self._session.execute(self._st.window_heartbeat,
                              (_alive_row(self.holder), self.holder, datetime.now(timezone.utc), ttl_s))

    def _take_over(self, crashed: Window) -> None:
        result = self._session.execute(self._st.take_over_window,
                                       (self.holder, self.mode, datetime.now(timezone.utc), WINDOW, crashed.holder))
        if not result.was_applied:
            raise MaintenanceError("another reclaim took over the crashed reclaim window first")
        self.resumed = crashed

    def __enter__(self) -> "ReclaimWindow":
        existing = current_window(self._session)
        if existing is None:
            open_window(self._session, self.holder, self.mode)
        elif not self._resumes(existing) or holder_alive(self._session, existing):
            raise MaintenanceError(self._refusal(existing))
        else:
            self._take_over(existing)
        self._heartbeat = Heartbeat(
            self._beat, "casstor-reclaim-window", f"the reclaim window's lease ({self.holder})", self.lapse_advice)
        return self

    def _resumes(self, crashed: Window) -> bool:
        """Whether this holder may take over ``crashed`` once its holder's heartbeat has lapsed."""
        return self.resumable

    def _refusal(self, existing: Window) -> str:
        return f"another reclaim is running: {existing.describe()}"

    def set_state(self, state: WindowState) -> None:
        set_window_state(self._session, self.holder, state)

    @property
    def hold(self) -> WindowHold:
        """What :func:`~casstor_ops.ops.reclaim.execute` needs of this window; RuntimeError outside its ``with``
        block (a bug: no sweep may run unheld)."""
        if self._heartbeat is None:
            raise RuntimeError("ReclaimWindow.hold outside its 'with' block")
        return WindowHold(self.mode, self.set_state, self.fence)

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        # A plain delete, like the heartbeat's writes: an LWT's timestamp need not order after them.
        self._session.execute(self._st.delete_window_row, (_alive_row(self.holder),))
        if exc_type is None or not self.left_open_on_failure:
            close_window(self._session, self.holder)


class RepairWindow(ReclaimWindow):
    """The window held by ``verify --repair-index``, online (stores keep running), so no reclaim runs beside it.

    Reclaim deletes index rows on purpose, and a repair meanwhile would
    write them back for blocks the reclaim then deletes (see
    :mod:`casstor_ops.ops.verify`). It refuses any open window, a crashed
    one included (that is a reclaim's to resume), and closes on every exit:
    a repair has nothing to resume. Example: ``with RepairWindow(session):
    ...``; MaintenanceError (exit 5, one line) when a window is open.
    """

    resumable = False
    left_open_on_failure = False
    kind = "verify"

    def __init__(self, session: Session) -> None:
        super().__init__(session, WindowMode.ONLINE)

    def _refusal(self, existing: Window) -> str:
        return (f"verify --repair-index refuses to run during the {existing.describe()}: reclaim deletes index rows "
                f"on purpose and a repair would undo it; run it afterwards")


class UpgradeWindow(ReclaimWindow):
    """The offline window ``casstor init`` holds while it upgrades a store's schema: writers of the older schema
    (which honour it) refuse to start, and those running are waited for (by the caller), so none writes a head
    the copy has passed.

    It resumes only a crashed upgrade's window (an ``init`` killed with -9 leaves it open: older writers stay
    stopped until a re-run completes the upgrade) and refuses any other open window, a crashed reclaim's
    included (that one is a reclaim's to resume). It closes on every exit the process lives to see: an upgrade
    that failed has copied nothing that a re-run does not copy again. Example: ``with UpgradeWindow(session):
    ...``; MaintenanceError (exit 5, one line) when another window is open.
    """

    left_open_on_failure = False
    kind = "upgrade"
    lapse_advice = "the new schema was not recorded: run 'casstor init' again"

    def __init__(self, session: Session) -> None:
        super().__init__(session, WindowMode.OFFLINE)

    def _resumes(self, crashed: Window) -> bool:
        return crashed.holder.startswith(f"{self.kind}@")

    def _refusal(self, existing: Window) -> str:
        if self._resumes(existing):
            return (f"another 'casstor init' is upgrading the store ({existing.describe()}); if it was killed, run "
                    f"'casstor init' again in {lease_timing().ttl_s} s")
        return (f"'casstor init' cannot upgrade the store during the {existing.describe()}: let it finish (if it "
                f"crashed, {RESUME_HINT}), then run 'casstor init' again")
