"""ls / stat / stats: exact totals past 2^31, prefix listing."""

import io
import uuid

from casstor_ops.store.keyspaces import DATA_KS, META_KS
from casstor_ops.store.api import Store


def test_stats_are_exact_past_two_to_the_31(empty_store):
    cql = empty_store
    head = cql.prepare(f"INSERT INTO {META_KS}.versions (id, version, size, hash, blocks) VALUES (?, ?, ?, ?, ?)")
    block = cql.prepare(f"INSERT INTO {DATA_KS}.existing_blocks (hash, size, stored_size) VALUES (?, ?, ?)")
    sizes = [3 * 2**31 + 7, 2**31 - 1, 5]
    for i, size in enumerate(sizes):
        cql.execute(head, (f"huge/{i}", uuid.uuid1(), size, bytes(32), 1))
    stored = [1000, 2**31 - 1, None]  # compressed, kept raw, indexed before stored sizes (counts as raw)
    for i in range(3):  # 3 x (2^31 - 1) unique bytes: a 32-bit sum would wrap
        cql.execute(block, (bytes([i]) * 32, 2**31 - 1, stored[i]))
    totals = Store(cql).stats()
    assert totals.files == 3 and totals.logical_bytes == sum(sizes)
    assert totals.unique_blocks == 3 and totals.unique_bytes == 3 * (2**31 - 1)
    assert totals.stored_bytes == 1000 + 2 * (2**31 - 1)
    assert totals.as_dict()["dedup_ratio"] == round(sum(sizes) / (3 * (2**31 - 1)), 6)
    assert totals.as_dict()["compression_ratio"] == round(3 * (2**31 - 1) / (1000 + 2 * (2**31 - 1)), 6)


def test_empty_store_stats(empty_store):
    totals = Store(empty_store).stats()
    assert (totals.files, totals.logical_bytes, totals.unique_blocks, totals.unique_bytes,
            totals.stored_bytes) == (0, 0, 0, 0, 0)
    assert totals.dedup_ratio == 1.0 and totals.compression_ratio == 1.0


def test_list_by_prefix_is_sorted(empty_store):
    store = Store(empty_store)
    for file_id in ["p/b", "p/a", "q/a", "p/c/d"]:
        store.put(io.BytesIO(file_id.encode()), file_id)
    assert [f.id for f in store.list("p/")] == ["p/a", "p/b", "p/c/d"]
    assert [f.id for f in store.list()] == ["p/a", "p/b", "p/c/d", "q/a"]
    assert list(store.list("zzz")) == []
    info = store.stat("q/a")
    assert info.as_dict()["size"] == 3 and len(info.as_dict()["hash"]) == 64
