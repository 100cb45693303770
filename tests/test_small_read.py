"""``Store.callbacks.read_small_async`` on the real node: the content of small versions, and ``None`` at any doubt.

Each doubt is injected (a damaged block, a lost block, a lost block list or a one-block row's ``lone_block``, too
many blocks); the test checks the fast path answers ``None`` and that ``Store.read``, the path the server falls
back to, then raises the error that applies.
"""

from __future__ import annotations

import io
import os
import threading

import pytest

from casstor_ops.errors import CorruptionError
from casstor_ops.store.api import Store
from casstor_ops.store.blocks import block_list
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import small_read
from casstor_ops.store.records import FileInfo

from .support import flip_block


def _read_small(store: Store, head: FileInfo) -> bytes | None:
    """What ``read_small_async`` answers (within 10 s: it must answer once)."""
    answered, answers = threading.Event(), []
    store.callbacks.read_small_async(head, lambda content: (answers.append(content), answered.set()))
    assert answered.wait(10)
    return answers[0]


def _hashes(cql, head: FileInfo) -> list[bytes]:
    return [digest for _, digest, _ in block_list.read(cql, Statements.for_session(cql), head)]


@pytest.mark.parametrize("content", [os.urandom(5000), os.urandom(250_000), os.urandom(80_000) * 3],
                         ids=["one-block", "several-blocks", "repeated-blocks"])
def test_a_small_version_is_read_whole(cql, content: bytes) -> None:
    store = Store(cql)
    store.put(io.BytesIO(content), "small-read/ok")
    head = store.stat("small-read/ok")
    assert 1 <= head.blocks <= small_read.MAX_BLOCKS  # at least 16 KiB each in the test store
    assert _read_small(store, head) == content


def test_an_empty_file_is_left_to_the_careful_path(cql) -> None:
    store = Store(cql)
    store.put(io.BytesIO(b""), "small-read/empty")
    assert _read_small(store, store.stat("small-read/empty")) is None


def _flip_first_block(cql, head: FileInfo) -> None:
    flip_block(cql, _hashes(cql, head)[0])


def _lose_first_block(cql, head: FileInfo) -> None:
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (_hashes(cql, head)[0],))


def _lose_block_list(cql, head: FileInfo) -> None:
    """The list's rows deleted, or a one-block version's row left without its ``lone_block`` (its list)."""
    cql.execute(cql.prepare(f"DELETE FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"),
                (head.id, head.version))
    cql.execute(cql.prepare(f"UPDATE {META_KS}.versions SET lone_block = null WHERE id = ? AND version = ?"),
                (head.id, head.version))


@pytest.mark.parametrize("inject", [_flip_first_block, _lose_first_block, _lose_block_list],
                         ids=["damaged-block", "lost-block", "lost-block-list"])
@pytest.mark.parametrize("size", [5000, 250_000], ids=["one-block", "several-blocks"])
def test_a_doubt_answers_none_and_the_careful_path_names_it(cql, inject, size: int) -> None:
    store = Store(cql)
    key = f"small-read/{inject.__name__}/{size}"
    store.put(io.BytesIO(os.urandom(size)), key)
    inject(cql, store.stat(key))
    head = store.stat(key)  # as a reader finds it after the damage (a one-block list is in the row)
    assert _read_small(store, head) is None
    with pytest.raises(CorruptionError):
        store.read(head, io.BytesIO())


def test_more_blocks_than_one_read_asks_for_are_left_to_the_careful_path(cql, monkeypatch) -> None:
    store = Store(cql)
    content = os.urandom(700_000)
    store.put(io.BytesIO(content), "small-read/many")
    head = store.stat("small-read/many")
    monkeypatch.setattr(small_read, "MAX_BLOCKS", head.blocks - 1)
    assert _read_small(store, head) is None
    out = io.BytesIO()
    store.read(head, out)
    assert out.getvalue() == content
