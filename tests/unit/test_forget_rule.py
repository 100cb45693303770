"""Forget's one rule, ``forget_keeps``, and the dedup report's forecast of it: an abandoned upload keeps nothing."""

from __future__ import annotations

from collections import namedtuple

from cassandra.util import uuid_from_time

from casstor_ops.ops.dedup_forgetting import ForgetRules
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.engine.multipart import UPLOADS
from casstor_ops.store.history.forget import forget_keeps
from casstor_ops.store.history.policy import Version

DAY_S = 86_400
NOW = (SAFETY.abandoned_upload_s + 10 * DAY_S) * 1_000_000  # microseconds: ten days past an upload's age limit
PART = f"{UPLOADS}bucket/key/1"
Row = namedtuple("Row", "version deleted")


def test_an_upload_untouched_past_its_age_keeps_nothing_and_any_other_id_its_head() -> None:
    old, young = [Version(0, 5 * DAY_S * 1_000_000, False)], [Version(0, NOW - DAY_S * 1_000_000, False)]
    assert forget_keeps(PART, old, {}, [], NOW, 0) == set()
    assert forget_keeps(PART, young, {}, [], NOW, 0) == {0}
    assert forget_keeps("bucket/key", old, {}, [], NOW, 0) == {0}


def test_the_reports_forecast_drops_an_abandoned_upload_as_forget_does() -> None:
    """Without the shared rule the forecast kept an abandoned part's head, which forget drops."""
    rules, row = ForgetRules({}, [], 0, NOW), Row(str(uuid_from_time(5 * DAY_S)), False)
    assert rules.groups_of(PART, [row]) == [(row.version, 0), (row.version, 1)]  # (all) and (no policy)
    assert rules.groups_of("bucket/key", [row]) == []
