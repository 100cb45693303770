"""The heartbeat's lapse arithmetic and fence, with fake beats and a fake clock (no Cassandra, no Spark)."""

from __future__ import annotations

import time

import pytest

from casstor_ops.errors import EXIT_LEASE_LAPSED, EXIT_USAGE, CasstorError, LeaseLapsedError
from casstor_ops.store.coordination.heartbeat import (Heartbeat, LeaseClock, LeaseTiming, checked_then_fenced,
                                                      lease_timing)

TIMING = LeaseTiming(ttl_s=6, period_s=2)   # the fence passes until 4 s after the last beat was sent


def _clock() -> LeaseClock:
    return LeaseClock(TIMING, "the test lease", "nothing was done")


def test_fence_passes_until_one_period_before_the_ttl_runs_out() -> None:
    """Injects one beat sent at 10.0 s; checks the fence passes at 13.9 s and fails from 14.0 s with one line."""
    clock = _clock()
    clock.beat_ok(sent=10.0, acked=10.5)
    assert clock.error(13.9, "writing") is None
    err = clock.error(14.0, "writing")
    assert isinstance(err, LeaseLapsedError) and err.exit_code == EXIT_LEASE_LAPSED
    assert str(err) == ("the test lease may have lapsed before writing: last heartbeat 4 s ago, lease TTL 6 s "
                        "(no heartbeat failed: was the process paused?); nothing was done")


def test_the_ttl_counts_from_the_send_time_and_a_failed_beat_extends_nothing() -> None:
    """Injects a beat acknowledged 3 s after it was sent, then a failed beat; checks validity runs from the send
    time and the fence's message names the failure."""
    clock = _clock()
    clock.beat_ok(sent=10.0, acked=13.0)
    assert clock.valid_until == 16.0
    clock.beat_failed(ConnectionError("cannot reach Cassandra"))
    err = clock.error(14.5, "deleting block content")
    assert err is not None and "(last error: ConnectionError: cannot reach Cassandra)" in str(err)
    clock.beat_ok(sent=14.6, acked=14.7)  # in time: the lease lives on, the error is forgotten
    assert clock.error(14.8, "deleting block content") is None


def test_a_lapse_is_final() -> None:
    """Injects a pause: no beat sent before the row's TTL ran out, then a successful one; checks the lease stays
    lapsed (the row was gone for a while: others may have acted) and the heartbeat would send no more."""
    clock = _clock()
    clock.beat_ok(sent=10.0, acked=10.1)
    assert clock.may_send(15.9)
    assert not clock.may_send(16.0)
    clock.beat_ok(sent=16.0, acked=16.1)
    assert clock.lapsed and clock.error(16.2, "writing") is not None


def test_a_beat_acknowledged_after_the_ttl_ran_out_lapses_the_lease() -> None:
    """Injects a beat sent in time whose answer came after the previous row's TTL; checks the lease lapsed."""
    clock = _clock()
    clock.beat_ok(sent=10.0, acked=10.1)
    clock.beat_ok(sent=12.0, acked=16.5)  # it may have reached the server after the row expired
    assert clock.lapsed and clock.error(16.6, "writing") is not None


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_heartbeat_beats_at_once_then_stops_beating_once_lapsed(monkeypatch) -> None:
    """Injects a clock that jumps past the TTL (a SIGSTOP as the heartbeat thread sees it); checks the first beat
    is synchronous, the fence then fails, and the thread sends no beat that would revive the row."""
    monkeypatch.setenv("CASSTOR_LEASE_TTL_S", "3")
    monkeypatch.setenv("CASSTOR_HEARTBEAT_S", "1")
    beats: list[int] = []
    fake = FakeTime()
    heartbeat = Heartbeat(beats.append, "test-heartbeat", "the test lease", "nothing was done", clock=fake)
    try:
        assert beats == [3]
        heartbeat.fence("writing")
        fake.now += 3
        with pytest.raises(LeaseLapsedError, match="may have lapsed before writing: last heartbeat 3 s ago"):
            heartbeat.fence("writing")
        time.sleep(1.5)  # the thread's next period: it must not beat
        assert beats == [3]
    finally:
        heartbeat.stop()


def test_first_beat_failure_propagates(monkeypatch) -> None:
    """Injects a beat that fails at once; checks the constructor raises it (the holder never held the row)."""
    def fail(ttl_s: int) -> None:
        raise ConnectionError("cannot reach Cassandra")

    with pytest.raises(ConnectionError):
        Heartbeat(fail, "test-heartbeat", "the test lease", "nothing was done")


def test_lease_timing_from_the_environment(monkeypatch) -> None:
    """Injects unset, valid, non-numeric and too-slow settings; checks defaults, values and one-line usage errors."""
    monkeypatch.delenv("CASSTOR_LEASE_TTL_S", raising=False)
    monkeypatch.delenv("CASSTOR_HEARTBEAT_S", raising=False)
    assert lease_timing() == LeaseTiming(60, 15)
    monkeypatch.setenv("CASSTOR_LEASE_TTL_S", "4")
    monkeypatch.setenv("CASSTOR_HEARTBEAT_S", "1")
    assert lease_timing() == LeaseTiming(4, 1)
    for ttl, period, message in [("abc", "1", "CASSTOR_LEASE_TTL_S='abc': expected a whole number from 3 to 86400"),
                                 ("4", "0", "CASSTOR_HEARTBEAT_S='0': expected a whole number from 1 to 86400"),
                                 ("4", "2", "CASSTOR_HEARTBEAT_S=2: must be at most a third of the lease TTL "
                                            "(CASSTOR_LEASE_TTL_S=4)")]:
        monkeypatch.setenv("CASSTOR_LEASE_TTL_S", ttl)
        monkeypatch.setenv("CASSTOR_HEARTBEAT_S", period)
        with pytest.raises(CasstorError) as caught:
            lease_timing()
        assert (caught.value.exit_code, str(caught.value)) == (EXIT_USAGE, message)


def test_a_check_runs_once_before_the_fences_and_the_fences_before_every_attempt() -> None:
    calls: list[str] = []
    fence = checked_then_fenced(lambda: calls.append("check"), lambda before: calls.append(f"lease {before}"),
                                lambda before: calls.append(f"turn {before}"))
    fence("1"), fence("2")
    assert calls == ["check", "lease 1", "turn 1", "lease 2", "turn 2"]


def test_a_failed_check_stops_the_attempt_before_its_fences() -> None:
    calls: list[str] = []

    def refuse() -> None:
        raise CasstorError("precondition failed")

    with pytest.raises(CasstorError):
        checked_then_fenced(refuse, calls.append)("head")
    assert calls == []
    checked_then_fenced(None, calls.append)("head")
    assert calls == ["head"]
