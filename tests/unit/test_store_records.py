"""What a store's result says as JSON (``casstor store --json``, the plain server's PUT answer)."""

from __future__ import annotations

import uuid

from datetime import datetime

from casstor_ops.store.records import FileInfo, StoreResult


def test_a_store_result_as_json_has_its_figures_in_field_order_without_hash_or_version() -> None:
    result = StoreResult("b/k", 65536, 1, 1, 65536, 0.012, 65601, b"\x01" * 32, uuid.uuid1())
    as_json = result.as_dict()
    assert list(as_json) == ["id", "bytes", "blocks", "new_blocks", "new_bytes", "seconds", "new_stored_bytes"]
    assert as_json == {"id": "b/k", "bytes": 65536, "blocks": 1, "new_blocks": 1, "new_bytes": 65536,
                       "seconds": 0.012, "new_stored_bytes": 65601}
    assert as_json is not result.as_dict()  # a dict of its own each time: a caller may change it


def test_a_heads_time_as_json_has_milliseconds_always_so_its_text_sorts_as_the_times_do() -> None:
    # What it checks: a head committed on a whole second (Cassandra keeps milliseconds: 1 in 1,000 heads) and one a
    # moment before it. Before, the first was "...:51Z" and the second "...:50.999000Z", and a head of the same
    # second but later, "...:51.337000Z", sorted before "...:51Z" as text (a CI run's test_history failed so).
    def at(when: datetime) -> str:
        return FileInfo("a", uuid.uuid1(), 1, b"\x00" * 32, 1, when).as_dict()["committed_at"]

    times = [datetime(2026, 12, 7, 21, 45, 50, 999000), datetime(2026, 12, 7, 21, 45, 51),
             datetime(2026, 12, 7, 21, 45, 51, 337000)]
    assert [at(when) for when in times] == ["2026-12-07T21:45:50.999Z", "2026-12-07T21:45:51.000Z",
                                            "2026-12-07T21:45:51.337Z"]
    assert sorted(at(when) for when in reversed(times)) == [at(when) for when in times]
    assert FileInfo("a", uuid.uuid1(), 1, b"\x00" * 32, 1, None).as_dict()["committed_at"] is None
