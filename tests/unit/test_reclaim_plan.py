"""The reclaim plan's table: what an operator reads before anything is deleted (no node, no Spark session)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from casstor_ops.ops.reclaim import Count, ReclaimPlan, ReclaimStats, execute
from casstor_ops.store.coordination.reclaim_window import ReclaimWindow, WindowHold, WindowMode


def _plan(**changes) -> ReclaimPlan:
    fields = dict(mode=WindowMode.ONLINE, planned_at=datetime(2026, 11, 23, 8, 30, tzinfo=timezone.utc), commit_bound_s=300,
                  stored=Count(10, 10 * 49152), referenced=Count(7, 7 * 49152), candidates=Count(3, 3 * 49152),
                  kept=Count(7, 7 * 49152), unindexed=None, repairable=Count(0, 0), missing=Count(0, 0),
                  missing_sample=[], stale_lists=2, stale_list_rows=14,
                  candidate_rows=None, repair_rows=None, stale_rows=None)
    return ReclaimPlan(**{**fields, **changes})


def test_the_table_names_every_figure_with_blocks_and_bytes() -> None:
    lines = _plan().table().splitlines()
    assert lines[0] == "reclaim plan (online, 2026-11-23 08:30:00 UTC, commit bound 300 s)"
    rows = {line[:36].strip(): line[36:].split() for line in lines[2:]}
    assert rows["stored blocks (index rows)"] == ["10", "480.00", "KiB"]
    assert rows["garbage: to delete"] == ["3", "144.00", "KiB"]
    assert rows["kept"] == ["7", "336.00", "KiB"]
    assert rows["stale block lists: to delete"][:2] == ["2", "lists,"]
    assert "content rows without index row" not in rows  # only when the blob table was scanned
    assert not any(line.startswith("  missing blocks, e.g.") for line in lines)


def test_missing_blocks_are_shown_with_examples_and_a_scan_adds_its_row() -> None:
    table = _plan(missing=Count(2, 100), missing_sample=["ab" * 32, "cd" * 32], unindexed=Count(1, 10)).table()
    assert f"missing blocks, e.g. {'ab' * 32}, {'cd' * 32}" in table
    assert "content rows without index row" in table


def test_stats_table_counts_what_was_done() -> None:
    table = ReclaimStats(deleted=Count(3, 3072), rescued=Count(1, 1024), repaired_index_rows=2, deleted_lists=4,
                         seconds=1.25).table()
    assert table.splitlines()[0] == "reclaim done in 1.2 s"
    assert "3.00 KiB" in table and "1.00 KiB" in table


def test_a_plan_runs_only_in_a_held_window_of_its_mode() -> None:
    """Injects an online plan into an offline window's hold and the other way round, and asks a window that
    was never entered for its hold; checks each is refused before anything is read or deleted (no session,
    no Spark: both are None here), so no sweep runs unheld or under the other mode's rules."""
    for plan_mode, window_mode in ((WindowMode.ONLINE, WindowMode.OFFLINE), (WindowMode.OFFLINE, WindowMode.ONLINE)):
        hold = WindowHold(window_mode, set_state=lambda state: None, fence=lambda before: None)
        with pytest.raises(ValueError, match=f"a plan made {plan_mode} cannot run in a window held {window_mode}"):
            execute(None, None, _plan(mode=plan_mode), hold)
    with pytest.raises(RuntimeError, match="outside its 'with' block"):
        ReclaimWindow.__new__(ReclaimWindow).hold
