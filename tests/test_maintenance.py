"""The reclaim window (LWT flag, heartbeat, resume and clear) and writer leases, on the real node."""

from __future__ import annotations

import threading
import time

import pytest

from casstor_ops import maintenance
from casstor_ops.errors import MaintenanceError
from casstor_ops.maintenance import (OFFLINE, ONLINE, ReclaimWindow, WriterLease, active_writers, clear_window,
                                     current_window, holder_alive, open_window, wait_for_writers)


def test_offline_window_refuses_writers_online_window_does_not(empty_store) -> None:
    cql = empty_store
    with ReclaimWindow(cql, OFFLINE) as window:
        with pytest.raises(MaintenanceError, match=f"writes are refused during the offline reclaim window held by "
                                                   f"{window.holder}"):
            with WriterLease(cql, "store"):
                pass
        assert active_writers(cql) == 0  # the refused writer withdrew its lease
    assert current_window(cql) is None
    with ReclaimWindow(cql, ONLINE):
        with WriterLease(cql, "store"):
            assert active_writers(cql) == 1
    assert active_writers(cql) == 0 and current_window(cql) is None


def test_second_reclaim_is_refused_while_the_first_lives(empty_store) -> None:
    cql = empty_store
    with ReclaimWindow(cql, OFFLINE) as first:
        assert holder_alive(cql, current_window(cql))
        with pytest.raises(MaintenanceError, match=f"another reclaim is running: offline reclaim window held by "
                                                   f"{first.holder}"):
            with ReclaimWindow(cql, ONLINE):
                pass
        with pytest.raises(MaintenanceError, match="belongs to a running reclaim"):
            clear_window(cql)
        with pytest.raises(MaintenanceError, match="another reclaim holds the store"):
            open_window(cql, "someone-else", OFFLINE)


def test_a_crashed_window_stays_open_and_is_resumed_or_cleared(empty_store) -> None:
    cql = empty_store
    with pytest.raises(RuntimeError):
        with ReclaimWindow(cql, OFFLINE) as crashed:
            crashed.set_state("deleting-content")
            raise RuntimeError("crash")
    left = current_window(cql)
    assert (left.holder, left.state) == (crashed.holder, "deleting-content")
    assert not holder_alive(cql, left)  # the heartbeat went with it

    with ReclaimWindow(cql, ONLINE) as resumed:
        assert resumed.resumed == left
        assert current_window(cql).holder == resumed.holder
        assert current_window(cql).mode == ONLINE
    assert current_window(cql) is None

    open_window(cql, "reclaim@killed:1", OFFLINE)
    assert clear_window(cql).holder == "reclaim@killed:1"
    assert current_window(cql) is None and clear_window(cql) is None


def test_wait_for_writers_waits_for_leases_then_times_out(empty_store) -> None:
    cql = empty_store
    lease = WriterLease(cql, "ingest").__enter__()
    timer = threading.Timer(1.5, lease.__exit__, (None, None, None))
    timer.start()
    started = time.monotonic()
    wait_for_writers(cql, timeout_s=30, poll_s=0.2)
    assert time.monotonic() - started >= 1.0
    timer.join()

    with WriterLease(cql, "store"):
        with pytest.raises(MaintenanceError, match=r"1 writer\(s\) still running after 0 s.*--clear-window"):
            wait_for_writers(cql, timeout_s=0.3, poll_s=0.1)


def test_heartbeat_keeps_a_lease_alive_past_its_ttl(empty_store, monkeypatch) -> None:
    cql = empty_store
    monkeypatch.setattr(maintenance, "LEASE_TTL_S", 2)
    monkeypatch.setattr(maintenance, "HEARTBEAT_S", 0.5)
    with WriterLease(cql, "store"):
        time.sleep(3)
        assert active_writers(cql) == 1
    assert active_writers(cql) == 0
