"""Writer leases (heartbeat, TTL, waiting for writers) and their refusal in an offline window, on the real node."""

from __future__ import annotations

import threading
import time

import pytest

from casstor_ops.errors import MaintenanceError
from casstor_ops.store.coordination.leases import WriterLease, active_writers, wait_for_writers
from casstor_ops.store.coordination.reclaim_window import ReclaimWindow, WindowMode, current_window


def test_offline_window_refuses_writers_online_window_does_not(empty_store) -> None:
    cql = empty_store
    with ReclaimWindow(cql, WindowMode.OFFLINE) as window:
        with pytest.raises(MaintenanceError, match=f"writes are refused during the offline reclaim window held by "
                                                   f"{window.holder}"):
            with WriterLease(cql, "store"):
                pass
        assert active_writers(cql) == 0  # the refused writer withdrew its lease
    assert current_window(cql) is None
    with ReclaimWindow(cql, WindowMode.ONLINE):
        with WriterLease(cql, "store"):
            assert active_writers(cql) == 1
    assert active_writers(cql) == 0 and current_window(cql) is None


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
        with pytest.raises(MaintenanceError, match=r"1 writer\(s\) still running after 0 s"):
            wait_for_writers(cql, timeout_s=0.3, poll_s=0.1)


def test_heartbeat_keeps_a_lease_alive_past_its_ttl(empty_store, monkeypatch) -> None:
    cql = empty_store
    monkeypatch.setenv("CASSTOR_LEASE_TTL_S", "3")
    monkeypatch.setenv("CASSTOR_HEARTBEAT_S", "1")
    with WriterLease(cql, "store") as lease:
        time.sleep(4)
        assert active_writers(cql) == 1
        lease.fence("checking the test's lease")
    assert active_writers(cql) == 0
