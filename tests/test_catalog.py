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


def test_a_walk_that_reads_subdirectories_ahead_lists_what_a_walk_one_at_a_time_lists(empty_store):
    """Store.list reads a directory's next subdirectories ahead on threads (their generations in one request):
    the same files in the same ID order as the walk that reads each directory when it gets there, with
    look-aheads smaller than a directory's subdirectories (several rounds), prefixes inside names and none."""
    from casstor_ops.store.batch_upload import SmallFile
    from casstor_ops.store.namespace.listing import files_under
    from casstor_ops.store.statements import Statements

    ids = [f"w/{a}/{b}/f{c}" for a in range(12) for b in range(3) for c in range(2)]
    ids += ["w/1.txt", "w/1-a", "w/top", "w/5/deep/er/est/x", "w/5/0/a/b"]
    store = Store(empty_store)
    assert not [r for r in store.put_many([SmallFile(i, i.encode()) for i in ids]) if isinstance(r, Exception)]
    st = Statements.for_session(empty_store)
    for prefix in ("w/", "w/1", "w/5/", "w/1/0/f", "w/zz", ""):
        wanted = sorted(i for i in ids if i.startswith(prefix))
        for ahead in (0, 1, 4, 16):
            assert [f.id for f in files_under(empty_store, st, prefix, ahead=ahead)] == wanted, (prefix, ahead)
    assert [f.id for f in store.list("w/")] == sorted(ids)
