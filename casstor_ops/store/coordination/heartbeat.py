"""Heartbeats: a TTL row kept alive by a daemon thread, and the fence that tells its holder when it may be gone.

Writer leases (:mod:`.leases`) and the running reclaim's liveness row
(:mod:`.reclaim_window`) are rows written with a TTL (``CASSTOR_LEASE_TTL_S``,
default 60 s) and rewritten every ``CASSTOR_HEARTBEAT_S`` (default 15 s): a
holder killed with -9 is gone from the table after at most the TTL.

A holder that is merely paused (SIGSTOP, a long GC or swap stall, a network
cut) is gone too, but does not know it: others act on the row's absence (an
offline reclaim deletes blocks, another reclaim takes the window over). So a
:class:`Heartbeat` records when each successful beat was *sent* (monotonic
clock): the server starts the row's TTL on receipt, later, so ``sent + TTL``
is a lower bound of the row's life. Before any write that is only safe while
the row exists, the holder calls :meth:`Heartbeat.fence`, which raises
:class:`~casstor_ops.errors.LeaseLapsedError` unless the row is sure to live
for one more heartbeat period (the margin for the fenced write to land). A
lapse is final: once a beat may have come too late, the row may have been
absent for a while, so the heartbeat stops and every later fence fails. A
paused process's heartbeat thread is paused too, while the monotonic clock
runs on: the first fence after the pause fails.

The arithmetic is :class:`LeaseClock` (no threads, no clock of its own).

Example::

    >>> heartbeat = Heartbeat(lambda ttl: session.execute(insert, (*row, ttl)), "casstor-lease",
    ...                       "the writer lease", "nothing was committed; store it again")  # doctest: +SKIP
    >>> heartbeat.fence("committing 'a.bin'")                                             # doctest: +SKIP
    >>> heartbeat.stop()                                                                   # doctest: +SKIP

Failures: the first beat's error propagates from the constructor (the holder
never held the row). A later beat that fails is retried at the next period,
and remembered: the fence's one-line error names the last one.
``CASSTOR_LEASE_TTL_S`` / ``CASSTOR_HEARTBEAT_S`` that are not whole numbers,
or a period above a third of the TTL, are a usage error (exit 2).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

from casstor_ops.cluster.envvars import env_int
from casstor_ops.errors import EXIT_USAGE, CasstorError, LeaseLapsedError
from casstor_ops.store.coordination.safety import SAFETY


Fence = Callable[[str], None]
"""Raise unless the holder's lease surely outlives the write that follows (the argument names that write)."""


def no_fence(before: str) -> None:
    """The fence of a holder without a lease (``Store.put(lease=False)``, ``execute`` outside a window): none."""


def checked_then_fenced(check: Callable[[], None] | None, *fences: Fence) -> Fence:
    """A fence that runs ``check`` (if any) on its first call only, then each of ``fences`` on every call.

    For a check made once, as late as a write allows (an S3 conditional request's precondition, under its turn:
    ``casstor_ops.serve.s3.conditions``), before a head write that may be retried: a retry must not check again a
    head that may already be its own, and the fences come after the check, each the last step before an attempt.

    Example::

        >>> calls = []
        >>> fence = checked_then_fenced(lambda: calls.append("check"), lambda before: calls.append(before))
        >>> fence("first attempt"); fence("second attempt"); calls
        ['check', 'first attempt', 'second attempt']

    What ``check`` or a fence raises propagates, and the write is not sent.
    """
    pending = [check] if check is not None else []

    def fenced(before: str) -> None:
        if pending:
            pending.pop()()
        for fence in fences:
            fence(before)

    return fenced


@dataclass(frozen=True)
class LeaseTiming:
    """A lease row's TTL and its heartbeat period (the period is also the fence's margin)."""

    ttl_s: int
    period_s: int


def lease_timing() -> LeaseTiming:
    """The TTL and period from ``CASSTOR_LEASE_TTL_S`` / ``CASSTOR_HEARTBEAT_S`` (defaults 60 s / 15 s).

    Example: with ``CASSTOR_LEASE_TTL_S=4 CASSTOR_HEARTBEAT_S=1``,
    ``lease_timing()`` is ``LeaseTiming(ttl_s=4, period_s=1)``. Raises
    CasstorError (exit 2) for a value that is not a whole number in range,
    or a period above a third of the TTL: the fence keeps one period of
    margin, and beats come a little later than every period, so with less
    a single late beat would fail the fence.
    """
    ttl = env_int("CASSTOR_LEASE_TTL_S", SAFETY.lease_ttl_s, 3, SAFETY.max_lease_ttl_s)
    period = env_int("CASSTOR_HEARTBEAT_S", SAFETY.heartbeat_s, 1, SAFETY.max_lease_ttl_s)
    if 3 * period > ttl:
        raise CasstorError(f"CASSTOR_HEARTBEAT_S={period}: must be at most a third of the lease TTL "
                           f"(CASSTOR_LEASE_TTL_S={ttl})", EXIT_USAGE)
    return LeaseTiming(ttl, period)


class LeaseClock:
    """Whether a TTL row kept alive by beats surely exists, from the monotonic times of its beats.

    ``valid_until`` is the last successful beat's send time plus the TTL: the
    row lives at least until then. A beat sent, or acknowledged, at or after
    ``valid_until`` may have found the row expired: the lease *lapsed*, for good.

    Example::

        >>> clock = LeaseClock(LeaseTiming(ttl_s=4, period_s=1), "the writer lease", "store it again")
        >>> clock.beat_ok(sent=10.0, acked=10.1)
        >>> clock.error(now=12.5, before="committing 'a'") is None
        True
        >>> str(clock.error(now=13.5, before="committing 'a'"))[:74]   # within one period of the TTL
        "the writer lease may have lapsed before committing 'a': last heartbeat 4 s"

    Failures: none; :meth:`error` returns the error for the caller to raise.
    """

    def __init__(self, timing: LeaseTiming, what: str, advice: str) -> None:
        self.timing = timing
        self._what = what
        self._advice = advice
        self._last_sent = -math.inf
        self.lapsed = False
        self.last_error: BaseException | None = None

    @property
    def valid_until(self) -> float:
        return self._last_sent + self.timing.ttl_s

    def may_send(self, now: float) -> bool:
        """Whether a beat sent at ``now`` continues the lease (False from the first one that could not)."""
        if self._last_sent > -math.inf and now >= self.valid_until:
            self.lapsed = True
        return not self.lapsed

    def beat_ok(self, sent: float, acked: float) -> None:
        """A beat sent at ``sent`` was acknowledged at ``acked`` (it reached the server in between)."""
        if self._last_sent > -math.inf and acked >= self.valid_until:
            self.lapsed = True  # it may have landed after the previous row expired
        if not self.lapsed:
            self._last_sent = max(self._last_sent, sent)
            self.last_error = None

    def beat_failed(self, err: BaseException) -> None:
        self.last_error = err

    def error(self, now: float, before: str) -> LeaseLapsedError | None:
        """The error to raise at ``now`` before doing ``before``, or None if the row outlives the margin."""
        if not self.lapsed and now < self.valid_until - self.timing.period_s:
            return None
        cause = (f"last error: {type(self.last_error).__name__}: {self.last_error}" if self.last_error
                 else "no heartbeat failed: was the process paused?")
        return LeaseLapsedError(f"{self._what} may have lapsed before {before}: last heartbeat "
                                f"{now - self._last_sent:.0f} s ago, lease TTL {self.timing.ttl_s} s ({cause}); "
                                f"{self._advice}")


class Heartbeat:
    """Calls ``beat(ttl_s)`` now and then every period in a daemon thread, until stopped or lapsed.

    ``what`` names the lease and ``advice`` says what the holder did not do,
    in the fence's error. ``clock`` is for tests.

    Example: ``Heartbeat(write_row, "casstor-lease", "the writer lease", "run it again").fence("committing 'a'")``.
    The first beat's error propagates; :meth:`fence` raises LeaseLapsedError (see the module docstring).
    """

    def __init__(self, beat: Callable[[int], None], name: str, what: str, advice: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.timing = lease_timing()
        self._beat = beat
        self._clock = clock
        self._lease = LeaseClock(self.timing, what, advice)
        self._lock = threading.Lock()  # the lease's times are read by the holder, written by the thread
        self._stop = threading.Event()
        sent = clock()
        beat(self.timing.ttl_s)
        self._lease.beat_ok(sent, clock())
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _beat_once(self) -> bool:
        """One beat; False once the lease lapsed (the row must not come back: others may own its place)."""
        sent = self._clock()
        with self._lock:
            if not self._lease.may_send(sent):
                return False
        try:
            self._beat(self.timing.ttl_s)
        except Exception as err:  # retried at the next period; the fence reports it if the lease lapses
            with self._lock:
                self._lease.beat_failed(err)
            return True
        acked = self._clock()
        with self._lock:
            self._lease.beat_ok(sent, acked)
            return not self._lease.lapsed

    def _run(self) -> None:
        while not self._stop.wait(self.timing.period_s) and self._beat_once():
            pass

    def fence(self, before: str) -> None:
        """Raise LeaseLapsedError unless the row surely outlives one more period (call it before each fenced write)."""
        with self._lock:
            err = self._lease.error(self._clock(), before)
        if err is not None:
            raise err

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class LeaseHolder:
    """Base of the holders of a heartbeat row (writer lease, reclaim window): their :meth:`fence`."""

    _heartbeat: Heartbeat | None = None

    def fence(self, before: str) -> None:
        """Raise LeaseLapsedError unless the holder's row surely outlives the write that follows.

        Example: ``lease.fence("committing 'a.bin'")`` right before the head
        write. RuntimeError outside the holder's ``with`` block (a bug).
        """
        if self._heartbeat is None:
            raise RuntimeError(f"{type(self).__name__}.fence outside its 'with' block")
        self._heartbeat.fence(before)
