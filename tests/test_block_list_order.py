"""A block list whose rows are each intact but out of order is refused before any byte is written or sent.

The fault: two adjacent rows of a file's ``file_blocks`` swap their blocks,
offsets kept consistent (what verify reports as a broken block list): every
block is intact, offsets, count and size agree with the head, and only the
file hash tells. Every read path checks the whole list against the head's
file hash before its first byte: ``casstor serve`` answers 502 with no byte
of the file, ``casstor restore`` exits 3 with nothing at DEST or on stdout,
a Spark restore of the prefix reports the file corrupt. A list found short
because the file changed meanwhile is still "changed, run again" (exit 12).
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from casstor_ops.errors import EXIT_CORRUPT, CorruptionError, FileChangedError
from casstor_ops.spark.bulk_report import exit_code
from casstor_ops.spark.bulk_restore import restore_many
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import restore as restore_module
from casstor_ops.store.engine.restore import Restore
from casstor_ops.store.namespace.entries import version_micros

from .serve_support import Server
from .support import restored, run_casstor

SIZE = 3_000_000  # over serve's SMALL_BODY_BYTES: streamed block by block


@pytest.fixture()
def store(cql) -> Store:
    return Store(cql)


def _swap_two_rows(cql, file_id: str) -> None:
    """Swap the blocks of two adjacent rows in the middle of ``file_id``'s block list, the second row moved to
    where the first's new block ends: every offset still follows from the sizes before it."""
    st = Statements.for_session(cql)
    version = cql.execute(st.head, (file_id,)).one().version
    rows = list(cql.execute(st.file_blocks, (file_id, version)))
    first, second = rows[len(rows) // 2], rows[len(rows) // 2 + 1]
    assert first.hash != second.hash
    cql.execute(cql.prepare(f"DELETE FROM {META_KS}.file_blocks WHERE id = ? AND version = ? AND block_offset = ?"),
                (file_id, version, second.block_offset))
    cql.execute(st.insert_file_block, (file_id, version, first.block_offset, second.hash, second.size))
    cql.execute(st.insert_file_block, (file_id, version, first.block_offset + second.size, first.hash, first.size))


def _stored_swapped(store: Store, cql, file_id: str) -> None:
    store.put(io.BytesIO(os.urandom(SIZE)), file_id)
    _swap_two_rows(cql, file_id)


@pytest.fixture(scope="module")
def server(cql) -> Iterator[Server]:
    running = Server()
    yield running
    code, log = running.stop()
    assert code == 0, log


def test_serve_answers_502_and_no_byte_of_the_file(server: Server, store: Store, cql) -> None:
    """Injects two swapped rows into a 3 MB file's block list; checks a GET (and a range GET) answers 502 with
    the one-line error as its body, no 200 with the file's bytes (it used to send all of them, then drop the
    connection)."""
    _stored_swapped(store, cql, "swapped/served")
    for headers in ({}, {"range": "bytes=0-99"}):
        status, _, body = server.request("GET", "swapped/served", headers=headers)
        assert status == 502, (status, len(body))
        assert b"does not match the file hash" in body and body.count(b"\n") == 1 and len(body) < 300


def test_restore_to_a_path_exits_3_and_leaves_nothing(store: Store, cql, tmp_path: Path) -> None:
    """Injects two swapped rows into a file's block list; checks `casstor restore ID DEST` exits 3 with one line
    and DEST (or a temporary file beside it) does not exist."""
    _stored_swapped(store, cql, "swapped/to-path")
    proc = run_casstor("restore", "swapped/to-path", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == EXIT_CORRUPT, proc.stderr
    assert proc.stderr.decode().startswith("casstor: 'swapped/to-path': the block list does not match the file hash")
    assert proc.stderr.count(b"\n") == 1 and list(tmp_path.iterdir()) == []


def test_restore_to_stdout_exits_3_and_writes_nothing(store: Store, cql) -> None:
    """Injects two swapped rows into a file's block list; checks `casstor restore ID -` exits 3 with nothing on
    stdout (it used to write the whole wrong file there, then exit 3)."""
    _stored_swapped(store, cql, "swapped/to-stdout")
    proc = run_casstor("restore", "swapped/to-stdout", "-", "--quiet")
    assert proc.returncode == EXIT_CORRUPT and proc.stdout == b"", (proc.returncode, len(proc.stdout))
    assert b"does not match the file hash" in proc.stderr


@pytest.mark.parametrize("held", [True, False])
def test_the_list_is_checked_before_any_byte_held_or_read_again(store: Store, cql, monkeypatch, held: bool) -> None:
    """Injects two swapped rows; checks the restore writes no byte before its CorruptionError, with the list kept
    from its check and with a list too long to keep (HELD_LIST_BLOCKS lowered to 2: read again to restore); and
    that an intact file restores byte-exact both ways."""
    if not held:
        monkeypatch.setattr(restore_module, "HELD_LIST_BLOCKS", 2)
    _stored_swapped(store, cql, f"swapped/held-{held}")
    out = io.BytesIO()
    with pytest.raises(CorruptionError, match="does not match the file hash"):
        store.restore(f"swapped/held-{held}", out)
    assert out.getvalue() == b""
    data = os.urandom(SIZE)
    store.put(io.BytesIO(data), f"intact/held-{held}")
    assert restored(store, f"intact/held-{held}") == data


class _ListGoneFirst(Restore):
    """A restore whose block list's first read comes after ``meanwhile`` ran."""

    def __init__(self, session, head, meanwhile) -> None:
        super().__init__(session, head)
        self._meanwhile = meanwhile

    def _list_rows(self):
        if self._meanwhile is not None:
            self._meanwhile, meanwhile = None, self._meanwhile
            meanwhile()
        return super()._list_rows()


def test_a_list_reclaimed_before_its_check_is_a_change_not_corruption(store: Store, cql) -> None:
    """Injects, before the block list is read, an overwrite of the file and the deletion of the old version's row
    and then its list (what forget does to a superseded version); checks the list found short is FileChangedError
    (exit 12), as before the list was checked whole, and nothing is written."""
    store.put(io.BytesIO(os.urandom(SIZE)), "changing/list")
    old = store.stat("changing/list")
    st = Statements.for_session(cql)

    def overwrite_and_reclaim() -> None:
        store.put(io.BytesIO(b"new content"), "changing/list")
        cql.execute(st.delete_version_at, (version_micros(old.version), "changing/list", old.version))
        cql.execute(st.delete_block_list_at, (time.time_ns() // 1000, "changing/list", old.version))

    out = io.BytesIO()
    with pytest.raises(FileChangedError, match="the file changed during restore"):
        _ListGoneFirst(cql, old, overwrite_and_reclaim).run(out)
    assert out.getvalue() == b""


def test_spark_restore_reports_the_file_corrupt(spark, store: Store, cql, tmp_path: Path) -> None:
    """Injects two swapped rows into one of two files under a prefix; checks a Spark restore of the prefix
    reports that file corrupt (exit 3), leaves nothing for it, and restores the other byte-exact."""
    _stored_swapped(store, cql, "swapped-tree/bad.bin")
    good = os.urandom(200_000)
    store.put(io.BytesIO(good), "swapped-tree/good.bin")
    results = restore_many(spark, "swapped-tree/", tmp_path)
    rows = {r.id: r for r in results.collect()}
    assert rows["swapped-tree/bad.bin"].status == "corrupt", rows
    assert "does not match the file hash" in rows["swapped-tree/bad.bin"].error
    assert rows["swapped-tree/good.bin"].status == "restored" and exit_code(results) == EXIT_CORRUPT
    assert not (tmp_path / "swapped-tree/bad.bin").exists()
    assert (tmp_path / "swapped-tree/good.bin").read_bytes() == good
