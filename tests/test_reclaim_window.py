"""The reclaim window (LWT flag, heartbeat, resume and clear), on the real node."""

from __future__ import annotations

import pytest

from casstor_ops.errors import MaintenanceError
from casstor_ops.store.coordination.reclaim_window import (ReclaimWindow, WindowMode, clear_window, current_window,
                                              holder_alive, open_window)


def test_second_reclaim_is_refused_while_the_first_lives(empty_store) -> None:
    cql = empty_store
    with ReclaimWindow(cql, WindowMode.OFFLINE) as first:
        assert holder_alive(cql, current_window(cql))
        with pytest.raises(MaintenanceError, match=f"another reclaim is running: offline reclaim window held by "
                                                   f"{first.holder}"):
            with ReclaimWindow(cql, WindowMode.ONLINE):
                pass
        with pytest.raises(MaintenanceError, match="belongs to a running reclaim"):
            clear_window(cql)
        with pytest.raises(MaintenanceError, match="another reclaim holds the store"):
            open_window(cql, "someone-else", WindowMode.OFFLINE)


def test_a_crashed_window_stays_open_and_is_resumed_or_cleared(empty_store) -> None:
    cql = empty_store
    with pytest.raises(RuntimeError):
        with ReclaimWindow(cql, WindowMode.OFFLINE) as crashed:
            crashed.set_state("deleting-content")
            raise RuntimeError("crash")
    left = current_window(cql)
    assert (left.holder, left.state) == (crashed.holder, "deleting-content")
    assert not holder_alive(cql, left)  # the heartbeat went with it

    with ReclaimWindow(cql, WindowMode.ONLINE) as resumed:
        assert resumed.resumed == left
        assert current_window(cql).holder == resumed.holder
        assert current_window(cql).mode == WindowMode.ONLINE
    assert current_window(cql) is None

    open_window(cql, "reclaim@killed:1", WindowMode.OFFLINE)
    assert clear_window(cql).holder == "reclaim@killed:1"
    assert current_window(cql) is None and clear_window(cql) is None
