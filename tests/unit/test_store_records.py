"""What a store's result says as JSON (``casstor store --json``, the plain server's PUT answer)."""

from __future__ import annotations

import uuid

from casstor_ops.store.records import StoreResult


def test_a_store_result_as_json_has_its_figures_in_field_order_without_hash_or_version() -> None:
    result = StoreResult("b/k", 65536, 1, 1, 65536, 0.012, 65601, b"\x01" * 32, uuid.uuid1())
    as_json = result.as_dict()
    assert list(as_json) == ["id", "bytes", "blocks", "new_blocks", "new_bytes", "seconds", "new_stored_bytes"]
    assert as_json == {"id": "b/k", "bytes": 65536, "blocks": 1, "new_blocks": 1, "new_bytes": 65536,
                       "seconds": 0.012, "new_stored_bytes": 65601}
    assert as_json is not result.as_dict()  # a dict of its own each time: a caller may change it
