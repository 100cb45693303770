"""A tree store's batched entries and its unchanged-file rule, without Cassandra."""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from casstor_ops.store.bulk.tree_files import ListedHeads
from casstor_ops.store.namespace import entries as entries_module
from casstor_ops.store.namespace.entries import BatchedEntries, Namespace
from casstor_ops.store.records import RACY_CTIME_NS, FileAttributes, FileInfo


class FakeNamespace:
    """Records each directory's batch of entries."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[str]]] = []

    def publish_many(self, infos: dict) -> None:
        self.batches += [(directory, [info.id for info, _ in files]) for directory, files in infos.items()]


def _info(file_id: str) -> FileInfo:
    return FileInfo(file_id, uuid.uuid1(), 1, b"h", 1, None)


def test_entries_go_by_directory_once_full_and_the_rest_at_the_flush() -> None:
    namespace = FakeNamespace()
    entries = BatchedEntries(namespace, files=3)
    for file_id in ("a/1", "b/1", "a/2", "a/3", "b/2", "a/4"):
        entries.publish(_info(file_id))
    assert namespace.batches == [("a/", ["a/1", "a/2", "a/3"])]
    entries.flush()
    assert sorted(namespace.batches[1:]) == [("a/", ["a/4"]), ("b/", ["b/1", "b/2"])]
    entries.flush()
    assert len(namespace.batches) == 3  # nothing left to write


def test_entries_published_from_many_threads_are_each_written_once() -> None:
    namespace = FakeNamespace()
    entries = BatchedEntries(namespace, files=7)
    ids = [f"d{n % 3}/{n}" for n in range(500)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda file_id: entries.publish(_info(file_id)), ids))
    entries.flush()
    written = [file_id for _, batch in namespace.batches for file_id in batch]
    assert sorted(written) == sorted(ids)
    assert all(file_id.startswith(directory) for directory, batch in namespace.batches for file_id in batch)


def test_a_file_is_unchanged_only_with_its_recorded_inode_and_change_time(tmp_path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    then = time.time_ns() - 2 * RACY_CTIME_NS
    os.utime(path, ns=(then, then))
    fresh = FileAttributes.of(os.stat(path))  # changed just now (the utime): too recent to trust
    assert fresh.ino is None and not fresh.unchanged(os.stat(path))
    status = os.stat(path)
    recorded = FileAttributes(fresh.mode, fresh.mtime_ns, status.st_ino, status.st_ctime_ns)
    assert recorded == fresh and recorded.unchanged(status)
    os.chmod(path, 0o600)  # the change time moves, whatever the mode
    assert not recorded.unchanged(os.stat(path))
    path.write_bytes(b"y")
    os.utime(path, ns=(then, then))  # mtime set back: the change time still tells
    assert not recorded.unchanged(os.stat(path))


class DirectorySession:
    """Knows which directory keys have a row; records each request as (first word of its CQL, its first value)."""

    def __init__(self, made: set[str]) -> None:
        self.made, self.requests = made, []

    def prepare(self, cql: str) -> str:
        return cql

    def execution_profile_clone_update(self, profile, **changes) -> None:
        return None

    def execute(self, cql: str, values: tuple, execution_profile: object = None) -> SimpleNamespace:
        self.requests.append((cql.split()[0], values[0]))
        if cql.startswith("SELECT dir, generation"):
            return [(key, None) for key in values[0] if key in self.made]
        if cql.startswith("SELECT generation"):
            found = [(None,)] if values[0] in self.made else []
            return SimpleNamespace(one=lambda: found[0] if found else None)
        if "directories" in cql:
            self.made.add(values[0])
        return SimpleNamespace(one=lambda: None)

    def execute_async(self, statement: str | list, values: tuple = ()) -> SimpleNamespace:
        """A write of ``make_many``, answered at once; a batch (a list of writes: ``unlogged_batch`` is ``list``
        here) recorded as ("BATCH", the first value of each)."""
        if isinstance(statement, list):
            self.requests.append(("BATCH", [row[0] for _, row in statement]))
            self.made.update(row[0] for cql, row in statement if "directories" in cql)
        else:
            self.execute(statement, values)
        return SimpleNamespace(result=lambda: None)


@pytest.fixture(autouse=True)
def _batches_as_lists(monkeypatch) -> None:
    """The namespace's unlogged batches as plain lists of writes, for DirectorySession to record."""
    monkeypatch.setattr(entries_module, "unlogged_batch", list)


def test_a_directory_listed_unmade_is_made_at_its_first_write_without_reading_its_row_again() -> None:
    session = DirectorySession({"/", "/a/"})
    namespace = Namespace(session, directory_rows=100_000)
    assert namespace.listed("a/b/") is None and namespace.listed("a/") == 0
    assert namespace.generation("a/b/") == 0 and namespace.generation("a/") == 0
    # One read of each row (the listing's), then a's marker of b/ and b/'s row, in that order.
    assert session.requests == [("SELECT", "/a/b/"), ("SELECT", "/a/"), ("INSERT", "/a/"), ("INSERT", "/a/b/")]
    assert namespace.generation("a/b/") == 0 and len(session.requests) == 4  # remembered as made


def test_many_directories_are_listed_in_one_read_and_kept_as_one_read_each_would_keep_them() -> None:
    """A tree store reads the rows of the directories it prefetches in one request (the re-run of 5,626 files in
    789 directories: 1.52 -> 1.16 s); what it finds is kept for the writes as :meth:`listed` keeps it."""
    session = DirectorySession({"/", "/a/"})
    namespace = Namespace(session, directory_rows=100_000)
    assert namespace.listed_many(["a/", "a/b/", ""]) == {"a/": 0, "a/b/": None, "": 0}
    assert session.requests == [("SELECT", ["/a/", "/a/b/", "/"])]
    assert namespace.generation("a/b/") == 0 and namespace.generation("a/") == 0
    assert session.requests[1:] == [("INSERT", "/a/"), ("INSERT", "/a/b/")]  # b/ made unread, a/ remembered


def test_a_prefetch_reads_the_parents_rows_with_its_directories_so_new_directories_are_made_unread() -> None:
    """A first store of a tree makes each new directory under its parent, whose generation names the marker's
    bucket: the prefetch reads the parents' rows in the same request, so making ``s/a/b/`` and ``s/a/`` sends
    writes only (it sent a single read of each unread parent: 606 of a first store's 9,992 requests)."""
    session = DirectorySession({"/"})
    store = SimpleNamespace(session=session, namespace=Namespace(session, directory_rows=100_000))
    listed = ListedHeads(store, entries=None)
    try:
        listed.prefetch(["s/a/b/1", "s/a/b/2", "s/c/3"])
        assert listed.get("s/a/b/1") is None and listed.get("s/c/3") is None
        assert session.requests[0] == ("SELECT", ["/s/a/b/", "/s/c/", "/", "/s/", "/s/a/"])
        assert store.namespace.generation("s/a/b/") == 0 and store.namespace.generation("s/c/") == 0
        listed.prefetch(["s/a/d/4"])  # its parents were read: only the new directory's row is
        assert listed.get("s/a/d/4") is None and store.namespace.generation("s/a/d/") == 0
        assert [values for kind, values in session.requests if kind == "SELECT"] == [
            ["/s/a/b/", "/s/c/", "/", "/s/", "/s/a/"], ["/s/a/d/"]]
        assert session.made == {"/", "/s/", "/s/a/", "/s/a/b/", "/s/c/", "/s/a/d/"}
    finally:
        listed.close()


def test_new_directories_are_made_together_markers_first_then_rows() -> None:
    """``make_many`` of a new tree under a made root: the markers go in one batch, before the rows, which go in
    another; nothing is read; each directory's generation is then known without a request."""
    session = DirectorySession({"/"})
    namespace = Namespace(session, directory_rows=100_000)
    namespace.listed_many(["s/a/b/", "s/c/", "", "s/", "s/a/"])
    namespace.make_many(["s/a/b/", "s/c/", "", "s/", "s/a/"])
    assert session.requests[1:] == [("BATCH", ["/s/a/", "/s/", "/", "/s/"]),  # the markers, in their parents
                                    ("BATCH", ["/s/a/b/", "/s/a/", "/s/", "/s/c/"])]  # then the rows
    before = len(session.requests)
    assert [namespace.generation(d) for d in ("s/", "s/a/", "s/a/b/", "s/c/")] == [0, 0, 0, 0]
    assert len(session.requests) == before


def test_a_new_directory_under_a_parent_not_read_is_left_to_its_first_write() -> None:
    """``make_many`` takes a directory only with a made parent (or one it makes): ``x/y/``, whose parent ``x/``
    was never read, is not made there (no row could be written before the markers of its whole path), and its
    first write makes it, its parent first."""
    session = DirectorySession({"/"})
    namespace = Namespace(session, directory_rows=100_000)
    namespace.listed_many(["x/y/"])
    namespace.make_many(["x/y/"])
    assert session.requests == [("SELECT", ["/x/y/"])]
    assert namespace.generation("x/y/") == 0
    assert session.made == {"/", "/x/", "/x/y/"}


def test_a_new_parent_of_directories_made_at_once_is_made_once_and_never_read() -> None:
    """Entry writers make two new directories of one new parent at once: one thread makes the parent, the other
    waits for it instead of reading its row and making it again (161 reads and ~120 rows of a first store)."""
    class SlowSession(DirectorySession):
        def execute(self, cql: str, values: tuple, execution_profile: object = None) -> SimpleNamespace:
            if cql.startswith("INSERT") and values[0] == "/":
                time.sleep(0.2)  # the parent's marker in the root: the other thread asks for the parent meanwhile
            return super().execute(cql, values, execution_profile)

    session = SlowSession({"/"})
    namespace = Namespace(session, directory_rows=100_000)
    assert namespace.listed_many(["a/b/", "a/c/", "a/", ""]) == {"a/b/": None, "a/c/": None, "a/": None, "": 0}
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(namespace.generation, ["a/b/", "a/c/"])) == [0, 0]
    writes = session.requests[1:]
    assert all(kind == "INSERT" for kind, _ in writes) and len(writes) == 6  # a/, b/, c/: a marker and a row each
    assert writes[:2] == [("INSERT", "/"), ("INSERT", "/a/")]  # the parent first, once
