"""Directory splits against the real test node: a directory outgrowing ``directory_rows`` moves to later
generations, no partition of ``dir_entries`` outgrows the bound, and listing, overwriting and removing still see
each name once, newest version first; many unsplit directories read in one request list as each read alone."""

from __future__ import annotations

import io
import json

import pytest

from casstor_ops.cluster.connection import connect
from casstor_ops.store.api import Store
from casstor_ops.store.bulk.tree import store_tree
from casstor_ops.store.bulk.tree_files import SKIPPED, STORED, ListedHeads
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.namespace.entries import BatchedEntries
from casstor_ops.store.namespace.layout import buckets, directory_key
from casstor_ops.store.namespace.listing import (all_files_under, directory_entries, files_under,
                                                   recorded_generation, unsplit_entries)

from .support import restored, run_casstor, write_tree

ROWS = 20     # the test's directory_rows: a split every 20 entries a bucket
FILES = 300   # into one directory: generation 0 holds 20, the rest spreads over generations 1 to ~4
SLOP = 2      # what a partition may exceed the bound by (every write checks below SPLIT_CHECKS rows; 0 expected)


@pytest.fixture()
def small_directories(empty_store):
    """The emptied test store splitting directories at ``ROWS`` entries a bucket (the settings row changed under
    it, as inline_store does); a fresh session (a session caches its namespace's bound); put back afterwards."""
    st = Statements.for_session(empty_store)
    recorded = empty_store.execute(st.setting, ("directory_rows",)).one().value
    empty_store.execute(st.write_setting, ("directory_rows", str(ROWS)))
    session = connect(start=False)
    try:
        yield session
    finally:
        session.cluster.shutdown()
        empty_store.execute(st.write_setting, ("directory_rows", recorded))


def _partition_sizes(session, directory: str) -> dict[int, int]:
    generation = recorded_generation(session, Statements.for_session(session), directory) or 0
    return {bucket: session.execute(f"SELECT COUNT(*) FROM {META_KS}.dir_entries WHERE dir = %s AND bucket = %s",
                                    (directory_key(directory), bucket)).one()[0] for bucket in buckets(generation)}


def _listed(prefix: str) -> list[dict]:
    out = run_casstor("ls", prefix, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_directory_splits_under_the_bound_and_lists_each_name_once(small_directories) -> None:
    """Injects 300 stores into one directory of a store whose directory_rows is 20. Checks the directory moved to
    generation 3 or later, every (dir, bucket) partition holds at most 20 + SLOP rows, `casstor ls big/` lists all
    300 once in name order; then that overwrites of names first written in generation 0 list once with the new
    version (and restore it), and that `rm` of a name written before the split hides it from `ls`."""
    session = small_directories
    names = [f"f{i:04d}" for i in range(FILES)]
    with Store(session) as store:
        for name in names:
            store.put(io.BytesIO(name.encode()), f"big/{name}")
        generation = recorded_generation(session, Statements.for_session(session), "big/") or 0
        assert generation >= 3, generation
        sizes = _partition_sizes(session, "big/")
        assert sum(sizes.values()) == FILES and max(sizes.values()) <= ROWS + SLOP, sizes
        listed = _listed("big/")
        assert [f["id"] for f in listed] == [f"big/{n}" for n in names]

        overwritten = names[:5]  # the first 20 went to generation 0's bucket
        for name in overwritten:
            store.put(io.BytesIO(b"new " + name.encode()), f"big/{name}")
        removed = names[5:10]
        for name in removed:
            store.remove(f"big/{name}")
        for name in overwritten:
            assert restored(store, f"big/{name}") == b"new " + name.encode()

    listed = _listed("big/")
    assert [f["id"] for f in listed] == [f"big/{n}" for n in names if n not in removed]
    by_id = {f["id"]: f for f in listed}
    for name in overwritten:
        assert by_id[f"big/{name}"]["size"] == len(b"new " + name.encode())
        stat = run_casstor("stat", f"big/{name}", "--json")
        assert json.loads(stat.stdout)["version"] == by_id[f"big/{name}"]["version"]
    assert max(_partition_sizes(session, "big/").values()) <= ROWS + SLOP


def test_many_unsplit_directories_read_at_once_list_as_each_read_alone(cql) -> None:
    """Stores files in `many/a/` (and its subdirectory `sub/`) and `many/b/`, then removes `many/b/2`. Checks that
    `unsplit_entries` of a/, a/sub/, b/ and an unmade c/ in one request gives each directory what
    `directory_entries` gives it read alone: the subdirectory's marker, no removed file, nothing for c/."""
    st = Statements.for_session(cql)
    with Store(cql) as store:
        for file_id in ("many/a/x", "many/a/y", "many/a/sub/z", "many/b/1", "many/b/2"):
            store.put(io.BytesIO(file_id.encode()), file_id)
        store.remove("many/b/2")
    directories = ["many/a/", "many/a/sub/", "many/b/", "many/c/"]
    together = unsplit_entries(cql, st, directories)
    alone = {d: list(directory_entries(cql, st, d, generation=0)) for d in directories}
    assert together == alone
    assert [e.name for e in together["many/a/"]] == ["sub/", "x", "y"] and together["many/a/"][0].file is None
    assert [e.name for e in together["many/b/"]] == ["1"] and together["many/c/"] == []


def test_a_tree_rerun_reads_split_and_unsplit_directories_alike(small_directories, tmp_path) -> None:
    """A tree of one directory of 60 files (stored one by one first, so it splits over buckets: directory_rows is
    20) and 40 directories of 2 files (unsplit: read ahead 32 a request, so in two reads), stored; then one file of
    s03/ removed from the store and one of s35/ changed on disk. Checks that the tree's listing read ahead
    (`ListedHeads.prefetch`) finds every file but the removed one with its committed version, the split directory's
    later buckets included; that the re-run skips every other file and stores those two again; and that a third
    run skips all 140."""
    files = {**{f"big/f{n:02d}": f"big {n}".encode() for n in range(60)},
             **{f"s{d:02d}/{n}": f"small {d} {n}".encode() for d in range(40) for n in range(2)}}
    write_tree(tmp_path, files)
    store = Store(small_directories)
    for name, data in files.items():
        if name.startswith("big/"):
            store.put(io.BytesIO(data), f"rerun/{name}")
    assert len(_partition_sizes(small_directories, "rerun/big/")) > 1
    # Stored again, all 140: the tree's files have attributes (mode, mtime) the one-by-one stores did not record.
    assert {row["status"] for row in store_tree(store, tmp_path, "rerun/", processes=1).rows} == {STORED}
    store.remove("rerun/s03/0")
    (tmp_path / "s35" / "1").write_bytes(b"changed")

    listed = ListedHeads(store, BatchedEntries(store.namespace))
    ids = [f"rerun/{name}" for name in files]
    listed.prefetch(ids)
    found = {file_id: listed.get(file_id) for file_id in ids}
    listed.close()
    assert [file_id for file_id, entry in found.items() if entry is None] == ["rerun/s03/0"]
    assert all(entry.file.version == store.stat(file_id).version for file_id, entry in found.items() if entry)

    again = {row["id"]: row["status"] for row in store_tree(store, tmp_path, "rerun/", processes=1).rows}
    assert {file_id for file_id, status in again.items() if status != SKIPPED} == {"rerun/s03/0", "rerun/s35/1"}
    assert again["rerun/s03/0"] == again["rerun/s35/1"] == STORED and len(again) == len(files)
    third = store_tree(store, tmp_path, "rerun/", processes=1).rows
    assert {row["status"] for row in third} == {SKIPPED} and len(third) == len(files)


def test_every_file_under_a_prefix_read_level_by_level_lists_as_the_walk(small_directories) -> None:
    """A prefix holding a split directory (60 files, directory_rows 20), 40 unsplit directories two levels deep (more
    than one request's worth: 32 a request), files beside a subdirectory of the same stem ("x" and "x/", "x-1") and
    a removed file. Checks that `all_files_under` lists what the streaming walk `files_under` lists, in the same
    (ID) order, for the whole prefix, for a directory's prefix and for a partial name ("lv/s1"), and for a prefix
    with no file."""
    session = small_directories
    st = Statements.for_session(session)
    ids = [f"lv/big/f{n:02d}" for n in range(60)] + [f"lv/s{d:02d}/deep/{n}" for d in range(40) for n in range(2)]
    ids += ["lv/x", "lv/x/y", "lv/x-1", "lv/s07/gone"]
    with Store(session) as store:
        for file_id in ids:
            store.put(io.BytesIO(file_id.encode()), file_id)
        store.remove("lv/s07/gone")
    assert len(_partition_sizes(session, "lv/big/")) > 1
    for prefix in ("lv/", "lv/s1", "lv/x", "lv/big/", "lv/none/"):
        walked = [(f.id, f.version) for f in files_under(session, st, prefix)]
        assert [(f.id, f.version) for f in all_files_under(session, st, prefix)] == walked, prefix
    assert len(all_files_under(session, st, "lv/")) == len(ids) - 1
