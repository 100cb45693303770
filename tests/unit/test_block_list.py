"""``casstor_ops.store.blocks.block_list``: where a version's block list lives, without a node (the real node's paths:
``tests/test_tree_batches.py``, ``tests/test_reclaim.py``)."""

from __future__ import annotations

import uuid

from types import SimpleNamespace

from cassandra.query import UNSET_VALUE

from casstor_ops.store.blocks.block_list import carried, file_hash_of, lone_block, read
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.engine.commit import block_list_rows, head_row, version_write
from casstor_ops.store.namespace.entries import entry_row
from casstor_ops.store.records import FileInfo, InlineContent

ONE, TWO = block_hash(b"a" * 300), block_hash(b"b" * 200)
VERSION = uuid.uuid1()


class ListSession:
    """Answers the file_blocks read with ``rows``, counting the reads."""

    def __init__(self, rows: list[tuple]) -> None:
        self.rows, self.reads = rows, 0

    def execute(self, statement, params, execution_profile=None) -> list[tuple]:
        self.reads += 1
        return self.rows


class St:
    file_blocks = "file_blocks"
    plain_rows = None


def test_a_one_block_file_names_its_block_in_its_head_and_writes_no_list_rows() -> None:
    row = head_row("f", VERSION, 300, [ONE], None, None, (None, None, None))
    assert block_list_rows("f", VERSION, [ONE], [300]) == []
    assert row.head(None).lone_block == ONE and row.head(None).blocks == 1
    assert carried(row.head(None)) == [(0, ONE, 300)]


def test_a_file_of_several_blocks_an_inline_file_and_an_old_row_keep_the_list_elsewhere() -> None:
    """Two blocks: rows in file_blocks, null column. Inline: no list at all. A row with a null column (written
    before schema 6): its list is read from file_blocks, as before."""
    assert lone_block([ONE, TWO], None) is None
    assert len(block_list_rows("f", VERSION, [ONE, TWO], [300, 200])) == 2
    inline = InlineContent("none", b"x")
    assert lone_block([ONE], inline) is None
    old = FileInfo("f", VERSION, 300, file_hash([ONE]), 1, None)
    session = ListSession([(0, ONE, 300)])
    assert carried(old) is None and read(session, St(), old) == [(0, ONE, 300)] and session.reads == 1


def test_a_carried_list_is_read_without_a_request() -> None:
    head = FileInfo("f", VERSION, 300, file_hash([ONE]), 1, None, lone_block=ONE)
    session = ListSession([])
    assert read(session, St(), head) == [(0, ONE, 300)] and session.reads == 0


def test_a_one_block_commit_writes_its_head_and_entry_naming_the_block_and_no_list(monkeypatch) -> None:
    """A single-file commit of one verified block (the minimum bound read as 1 s, no clock faked: it is quick).
    Checks no file_blocks batch is sent, the head row names the block, and so does the entry published after it
    (a tree restore takes the list from the entry)."""
    from types import SimpleNamespace

    from casstor_ops.store.engine import commit as commit_module
    from casstor_ops.store.engine.commit import Commit, VerifiedBlocks

    sent, published = [], []
    requests = SimpleNamespace(submit_batch=lambda statement, rows, done: sent.append(statement), drain=lambda: None)
    session = SimpleNamespace(execute=lambda statement, row: sent.append((statement, row)))
    namespace = SimpleNamespace(publish=lambda info, stored_size=None: published.append(info))
    st = SimpleNamespace(insert_version="insert_version", insert_file_block="insert_file_block")
    monkeypatch.setattr(commit_module, "commit_bound_s", lambda session: 300)
    blocks = VerifiedBlocks([ONE], [300], {ONE: commit_module.time.monotonic()}, lambda hashes, reread: None)
    head = Commit(session, requests, st, blocks, namespace=namespace).run(SimpleNamespace(), "f", 300)
    (statement, row), = sent
    assert statement == "insert_version" and row[14] == ONE
    assert published == [head] and published[0].lone_block == ONE


def test_a_one_block_row_and_entry_are_written_without_a_file_hash_and_read_with_it() -> None:
    """Schema 7: the version row's and the entry's ``hash`` are left unset for a one-block file, and every reader's
    :func:`file_hash_of` gives its file hash from ``lone_block``, even over a stale ``hash`` cell an entry of an
    older many-block version left (unset writes nothing). A file of two blocks keeps its hash column."""
    st = SimpleNamespace(insert_version="insert_version")
    one = head_row("f", VERSION, 300, [ONE], None, None, (None, None, None))
    two = head_row("f", VERSION, 500, [ONE, TWO], None, None, (None, None, None))
    assert version_write(st, one, None).values[3] is UNSET_VALUE and version_write(st, two, None).values[3] == two.hash
    assert entry_row(one.head(None), None, False)[2] is UNSET_VALUE
    assert entry_row(two.head(None), None, False)[2] == file_hash([ONE, TWO])
    stale = SimpleNamespace(hash=two.hash, lone_block=ONE)
    assert file_hash_of(SimpleNamespace(hash=None, lone_block=ONE)) == file_hash_of(stale) == file_hash([ONE])
    assert file_hash_of(SimpleNamespace(hash=two.hash, lone_block=None)) == file_hash([ONE, TWO])
