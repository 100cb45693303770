"""Which versions a retention policy keeps (store/history/policy.py): restic's terms on a controllable clock.

Versions are given as times on a fixed clock (2026-03-02, a Monday, at midnight UTC, plus offsets), so each
term's periods are known: no node, no wall clock.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.history.policy import (Policy, Version, format_duration, kept, parse_duration, pinned,
                                              policy_for)

S = 1_000_000
H = 3600 * S
D = 24 * H
EPOCH = int(datetime(2026, 3, 2, tzinfo=timezone.utc).timestamp()) * S  # a Monday, 00:00 UTC


def history(*offsets: int, deleted: tuple[int, ...] = ()) -> list[Version]:
    """Versions at EPOCH + each offset, newest first, keyed by their offset; offsets in ``deleted`` are markers."""
    return [Version(o, EPOCH + o, o in deleted) for o in sorted(offsets, reverse=True)]


NOW = EPOCH + 400 * D  # long after every version: no grace applies


def test_no_policy_keeps_the_newest_only_and_nothing_after_rm() -> None:
    assert kept(history(0, H, 2 * H), None, NOW) == {2 * H}
    assert kept(history(0, H, 2 * H, deleted=(2 * H,)), None, NOW) == set()


def test_keep_last_counts_markers_but_they_keep_nothing() -> None:
    assert kept(history(0, H, 2 * H, 3 * H), Policy(keep_last=2), NOW) == {3 * H, 2 * H}
    # The marker takes one of the two places; it is kept because a version older than it is.
    assert kept(history(0, H, 2 * H, deleted=(2 * H,)), Policy(keep_last=2), NOW) == {2 * H, H}
    assert kept(history(0, H, deleted=(H,)), Policy(keep_last=1), NOW) == set()


def test_keep_within_is_relative_to_the_newest_version() -> None:
    versions = history(0, 10 * D, 19 * D, 20 * D)
    assert kept(versions, Policy(keep_within_s=2 * 86400), NOW) == {20 * D, 19 * D}
    assert kept(versions, Policy(keep_within_s=20 * 86400), NOW) == {20 * D, 19 * D, 10 * D, 0}


def test_keep_hourly_keeps_the_newest_of_each_of_the_last_hours_with_a_version() -> None:
    versions = history(0, 10 * S, H + 5 * S, H + 50 * S, 5 * H)
    assert kept(versions, Policy(keep_hourly=2), NOW) == {5 * H, H + 50 * S}
    assert kept(versions, Policy(keep_hourly=3), NOW) == {5 * H, H + 50 * S, 10 * S}


def test_keep_daily_weekly_monthly() -> None:
    versions = history(0, 2 * H, D, D + H, 7 * D, 8 * D, 35 * D)  # days 0, 1, 7, 8, 35; weeks 0, 1, 5
    assert kept(versions, Policy(keep_daily=3), NOW) == {35 * D, 8 * D, 7 * D}
    assert kept(versions, Policy(keep_weekly=3), NOW) == {35 * D, 8 * D, D + H}
    assert kept(versions, Policy(keep_monthly=2), NOW) == {35 * D, 8 * D}  # April, March


def test_a_marker_takes_its_period() -> None:
    versions = history(0, D, D + H, deleted=(D + H,))
    assert kept(versions, Policy(keep_daily=1), NOW) == set()
    assert kept(versions, Policy(keep_daily=2), NOW) == {D + H, 0}


def test_terms_add_up() -> None:
    versions = history(0, D, 2 * D, 3 * D, 40 * D)
    assert kept(versions, Policy(keep_last=1, keep_monthly=2), NOW) == {40 * D, 3 * D}


def test_a_snapshot_pins_the_head_at_its_instant() -> None:
    versions = history(0, H, 2 * H, deleted=(H,))
    assert pinned(versions, EPOCH + 90 * 60 * S) is None  # removed then
    # 0 is pinned, so the marker after it stays (else 0 would read as the head between H and 2H).
    assert kept(versions, None, NOW, pins=[EPOCH + 30 * 60 * S, EPOCH - S]) == {2 * H, H, 0}
    assert kept(history(0, H, deleted=(H,)), None, NOW, pins=[EPOCH]) == {H, 0}  # the marker stays: 0 is kept


def test_the_grace_keeps_what_was_superseded_or_removed_lately() -> None:
    versions = history(0, H, 2 * H, deleted=(2 * H,))
    assert kept(versions, None, now=EPOCH + 2 * H + 10 * S, grace=60 * S) == {2 * H, H}
    assert kept(versions, None, now=EPOCH + 2 * H + 61 * S, grace=60 * S) == set()


def test_the_longest_prefix_policy_applies() -> None:
    policies = {"a/": Policy(keep_last=5), "a/b/": Policy(keep_last=2), "": Policy(keep_daily=1)}
    assert policy_for("a/b/c", policies) == Policy(keep_last=2)
    assert policy_for("a/c", policies) == Policy(keep_last=5)
    assert policy_for("z", policies) == Policy(keep_daily=1)
    assert policy_for("z", {"a/": Policy(keep_last=1)}) is None


def test_durations() -> None:
    assert parse_duration("1y6m") == 365 * 86400 + 180 * 86400
    assert parse_duration("7d12h") == 7 * 86400 + 12 * 3600
    assert format_duration(parse_duration("1d1h30s")) == "1d1h30s"
    for bad in ("", "7", "d", "7x", "-1d", "1 d"):
        with pytest.raises(CasstorError, match="duration"):
            parse_duration(bad)


def test_policy_checks_and_describes() -> None:
    assert Policy(keep_last=3, keep_within_s=86400).describe() == "--keep-last 3 --keep-within 1d"
    with pytest.raises(CasstorError, match="at least one"):
        Policy().checked()
    with pytest.raises(CasstorError, match="keep-daily: must not be negative"):
        Policy(keep_daily=-1).checked()
