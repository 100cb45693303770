"""``SmallRead`` without a node: what it answers for each reply, and that it answers exactly once.

A fake session answers each statement at once, with rows or an error; the integration tests
(``tests/test_small_read.py``) do the same against the real node.
"""

from __future__ import annotations

import uuid

import pytest

from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.engine import small_read
from casstor_ops.store.engine.small_read import SmallRead
from casstor_ops.store.records import FileInfo


class FakeStatements:
    file_blocks, read_block, read_blocks, plain_rows = "list", "one block", "blocks", "plain"


class FakeFuture:
    def __init__(self, answer) -> None:
        self._answer = answer

    def add_callbacks(self, callback, errback) -> None:
        if isinstance(self._answer, Exception):
            errback(self._answer)
        else:
            callback(self._answer)


class FakeSession:
    """Answers each statement with ``replies[statement]``: rows, or an exception (as the driver's errback)."""

    def __init__(self, replies: dict) -> None:
        self.replies = replies
        self.sent: list[str] = []

    def execute_async(self, statement, params, execution_profile=None) -> FakeFuture:
        assert execution_profile == FakeStatements.plain_rows
        self.sent.append(statement)
        return FakeFuture(self.replies[statement])


A, B = b"a" * 300, b"b" * 200


def _head(blocks: list[bytes], size: int | None = None, count: int | None = None) -> FileInfo:
    return FileInfo("f", uuid.uuid1(), sum(map(len, blocks)) if size is None else size,
                    file_hash(block_hash(b) for b in blocks), len(blocks) if count is None else count, None)


def _list(blocks: list[bytes]) -> list[tuple]:
    offsets = [sum(map(len, blocks[:i])) for i in range(len(blocks))]
    return [(offset, block_hash(b), len(b)) for offset, b in zip(offsets, blocks)]


def _read(head: FileInfo, replies: dict) -> tuple[list, list[str]]:
    session, answers = FakeSession(replies), []
    SmallRead(session, FakeStatements(), head, answers.append).start()
    return answers, session.sent


def test_one_block_is_read_with_the_single_key_statement() -> None:
    answers, sent = _read(_head([A]), {"list": _list([A]), "one block": [(block_hash(A), None, A)]})
    assert answers == [A] and sent == ["list", "one block"]


def test_repeated_blocks_are_asked_for_once_and_joined_in_order() -> None:
    blocks = [A, B, A]
    answers, sent = _read(_head(blocks), {"list": _list(blocks),
                                          "blocks": [(block_hash(B), None, B), (block_hash(A), None, A)]})
    assert answers == [A + B + A] and sent == ["list", "blocks"]


@pytest.mark.parametrize("head, replies", [
    (_head([A]), {"list": TimeoutError("list read timed out")}),
    (_head([A]), {"list": _list([A]), "one block": TimeoutError("block read timed out")}),
    (_head([A], count=2), {"list": _list([A])}),                                       # list shorter than head
    (_head([A], size=301), {"list": _list([A])}),                                      # sizes do not add up
    (_head([A]), {"list": _list([A]), "one block": []}),                               # block missing
    (_head([A]), {"list": _list([A]), "one block": [(block_hash(A), None, B)]}),       # damaged
    (_head([A]), {"list": _list([A]), "one block": [(block_hash(A), "lz9", A)]}),      # unknown codec
    (_head([A]), {"list": _list([A]), "one block": [(block_hash(A), A)]}),             # a reply of another shape
], ids=["list-failed", "block-failed", "short-list", "sizes", "missing", "damaged", "codec", "shape"])
def test_every_doubt_answers_none_exactly_once(head: FileInfo, replies: dict) -> None:
    answers, _ = _read(head, replies)
    assert answers == [None]


def test_a_list_that_does_not_hash_to_the_head_answers_none() -> None:
    head = _head([A, B])
    answers, _ = _read(head, {"list": _list([B, A]), "blocks": [(block_hash(A), None, A), (block_hash(B), None, B)]})
    assert answers == [None]


@pytest.mark.parametrize("count", [0, small_read.MAX_BLOCKS + 1])
def test_no_blocks_or_too_many_answer_none_without_a_request(count: int) -> None:
    answers, sent = _read(_head([A], count=count), {})
    assert answers == [None] and sent == []
