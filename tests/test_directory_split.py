"""Directory splits against the real test node: a directory outgrowing ``directory_rows`` moves to later
generations, no partition of ``dir_entries`` outgrows the bound, and listing, overwriting and removing still see
each name once, newest version first."""

from __future__ import annotations

import io
import json

import pytest

from casstor_ops.cluster.connection import connect
from casstor_ops.store.api import Store
from casstor_ops.store.keyspaces import META_KS
from casstor_ops.store.namespace.layout import buckets, directory_key
from casstor_ops.store.namespace.listing import recorded_generation
from casstor_ops.store.statements import Statements

from .support import restored, run_casstor

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
