"""New directories made together (``Namespace.make_many``) against the real test node: a tree store's read-ahead
makes the directories it found unmade in a few requests, and every directory row it writes has the markers of its
whole path, also when two calls take crossing parts of one tree at once."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

from casstor_ops.store.api import Store
from casstor_ops.store.bulk.tree import store_tree
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.namespace.layout import bucket_of, directory_key, markers
from casstor_ops.store.namespace.listing import recorded_generation

from .support import restored, write_tree

ROWS = 1000


def _marker_written(session, parent: str, name: str) -> bool:
    generation = recorded_generation(session, Statements.for_session(session), parent) or 0
    return session.execute("SELECT name FROM casstor_meta.dir_entries WHERE dir = %s AND bucket = %s AND name = %s",
                           (directory_key(parent), bucket_of(name, generation), name)).one() is not None


def _path_complete(session, directory: str) -> bool:
    """The directory has its row and every marker from the root down to it."""
    st = Statements.for_session(session)
    return recorded_generation(session, st, directory) is not None and all(
        _marker_written(session, parent, name) for parent, name in markers(directory))


def test_crossing_calls_make_every_path_whole_and_never_wait_for_each_other(cql) -> None:
    """Injects, 20 times over, two make_many calls at once on crossing parts of one new tree: one takes the top
    directory and a grandchild, the other the child between them (the grandchild's parent). Checks that both
    return, and that each of the three
    directories then has its row and the markers of its whole path. (A call that took its part whole would wait,
    for the marker's bucket, on the parent the other is making while holding the directory the other waits on.)"""
    for _ in range(20):
        top = f"making-{uuid.uuid4().hex[:8]}/"
        child, grandchild = top + "x/", top + "x/y/"
        namespace = Namespace(cql, ROWS)
        assert namespace.listed_many(["", top, child, grandchild])[grandchild] is None
        calls = [threading.Thread(target=namespace.make_many, args=(made,), daemon=True)
                 for made in ([top, grandchild], [child])]
        for call in calls:
            call.start()
        for call in calls:
            call.join(timeout=30)
        assert not any(call.is_alive() for call in calls)
        assert namespace.generation(grandchild) == 0  # made, or made now by its first write
        assert all(_path_complete(cql, d) for d in (top, child, grandchild))


def test_a_tree_store_makes_its_directories_ahead_and_lists_every_file(cql, tmp_path: Path, monkeypatch) -> None:
    """Stores a new tree of 63 files in 24 new directories, counting the directories made one by one at a first
    write (``Namespace._make``, wrapped). Checks that the read-ahead made them all (none made one by one), each
    with its row and its whole path of markers, and that the tree lists and restores byte-exact."""
    prefix = f"ahead-{uuid.uuid4().hex[:8]}"
    files = {f"d{a}/e{b}/f{c}.txt": f"{a}.{b}.{c}".encode() * (a + 1) for a in range(3) for b in range(7)
             for c in range(3) if (a, b) != (0, 6)}
    files.update({f"top{n}.txt": bytes([n]) * 100 for n in range(3)})
    source = tmp_path / "src"
    write_tree(source, files)
    one_by_one = []
    make = Namespace._make
    monkeypatch.setattr(Namespace, "_make", lambda self, directory: one_by_one.append(directory)
                        or make(self, directory))
    with Store(cql) as store:
        assert store_tree(store, source, prefix + "/", processes=1).exit_code == 0
        directories = ({f"{prefix}/{path.rsplit('/', 1)[0]}/" for path in files if "/" in path}
                       | {f"{prefix}/d{a}/" for a in range(3)} | {f"{prefix}/"})
        assert len(directories) == 24
        assert not directories & store.namespace._unmade and not directories & set(one_by_one)
        assert all(_path_complete(cql, d) for d in directories)
        assert {f.id for f in store.list_all(prefix + "/")} == {f"{prefix}/{path}" for path in files}
        assert all(restored(store, f"{prefix}/{path}") == data for path, data in files.items())
