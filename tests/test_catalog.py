"""ls / stat / stats: exact totals past 2^31, prefix listing."""

import io
import uuid

import pytest

from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS


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
    from casstor_ops.store.cql.statements import Statements
    from casstor_ops.store.engine.batch_upload import SmallFile
    from casstor_ops.store.namespace.listing import files_under

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


def test_a_one_block_version_is_stored_without_a_file_hash_and_every_reader_gives_it(empty_store):
    """Schema 7: a one-block file's version row and directory entry hold no ``hash`` (its lone block's hash gives
    it). A file of several blocks is overwritten by one of one block, then by several again: the entry of the
    one-block version keeps the stale hash cell of the first (an unset column writes nothing). Checks the rows
    as stored, and that stat, the listing, the history and a read give each version's own file hash."""
    import os

    from casstor_ops.store.blocks.hashing import file_hash
    from casstor_ops.store.namespace.layout import directory_key

    store = Store(empty_store)
    contents = [os.urandom(250_000), os.urandom(5000), os.urandom(260_000)]
    results = []
    for content in contents:
        results.append(store.put(io.BytesIO(content), "one-block/f"))
        head = store.stat("one-block/f")
        assert head.hash == results[-1].hash and [f.hash for f in store.list("one-block/")] == [head.hash]
        out = io.BytesIO()
        store.read(head, out)
        assert out.getvalue() == content
        if head.lone_block is not None:
            row = empty_store.execute(f"SELECT hash FROM {META_KS}.versions WHERE id = %s AND version = %s",
                                      ("one-block/f", head.version)).one()
            entry = empty_store.execute(f"SELECT hash FROM {META_KS}.dir_entries WHERE dir = %s AND bucket = 0 "
                                        f"AND name = 'f'", (directory_key("one-block/"),)).one()
            assert row.hash is None and entry.hash == results[0].hash != head.hash
            assert head.hash == file_hash([head.lone_block])
    assert [results[1].blocks, results[0].blocks > 1, results[2].blocks > 1] == [1, True, True]
    assert [v.file.hash for v in store.versions("one-block/f")] == [r.hash for r in reversed(results)]


def test_remove_all_writes_every_marker_and_keeps_every_version(cql):
    """Store.remove_all (a completed upload's parts): each file gets a delete marker, so none is listed or found,
    in two directories at once, and each keeps its version for forget; a file it was not given is untouched."""
    from casstor_ops.errors import NotFoundError

    store = Store(cql)
    ids = [f"remove-all/a/{n:03d}" for n in range(40)] + ["remove-all/b/z", "remove-all/b/kept"]
    for file_id in ids:
        store.put(io.BytesIO(file_id.encode() * 300), file_id)
    store.remove_all(ids[:-1])
    assert [f.id for f in store.list("remove-all/")] == ["remove-all/b/kept"]
    for file_id in ids[:-1]:
        with pytest.raises(NotFoundError):
            store.stat(file_id)
        marker, kept = store.versions(file_id)
        assert marker.deleted and not kept.deleted and kept.file.size == len(file_id) * 300
