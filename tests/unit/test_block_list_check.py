"""``checked_list``: a block list against its head, without a node (``tests/test_block_list_order.py`` runs
the same faults through every read path on the real node)."""

from __future__ import annotations

import uuid

import pytest

from casstor_ops.errors import CorruptionError
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.engine.restore import ShortList, checked_list
from casstor_ops.store.records import FileInfo

BLOCKS = [b"a" * 300, b"b" * 200, b"c" * 100]


def _rows(blocks: list[bytes]) -> list[tuple[int, bytes, int]]:
    offsets = [sum(map(len, blocks[:i])) for i in range(len(blocks))]
    return [(offset, block_hash(b), len(b)) for offset, b in zip(offsets, blocks)]


HEAD = FileInfo("f", uuid.uuid1(), sum(map(len, BLOCKS)), file_hash(block_hash(b) for b in BLOCKS), len(BLOCKS),
                None)


def test_an_intact_list_is_its_rows() -> None:
    assert list(checked_list(HEAD, _rows(BLOCKS))) == _rows(BLOCKS)


def test_two_swapped_rows_with_consistent_offsets_are_refused_once_all_are_read() -> None:
    """Swaps the last two blocks (offsets follow the sizes): count and size agree, only the file hash tells."""
    with pytest.raises(CorruptionError, match="does not match the file hash") as caught:
        list(checked_list(HEAD, _rows([BLOCKS[0], BLOCKS[2], BLOCKS[1]])))
    assert not isinstance(caught.value, ShortList)


def test_a_short_list_is_a_short_list() -> None:
    with pytest.raises(ShortList, match="has 2 blocks / 500 bytes, the head says 3 / 600"):
        list(checked_list(HEAD, _rows(BLOCKS)[:2]))


def test_a_row_out_of_place_is_refused_where_it_is_met() -> None:
    rows = _rows(BLOCKS)
    rows[1] = (rows[1][0] + 1, *rows[1][1:])
    checked = checked_list(HEAD, rows)
    assert next(checked) == rows[0]
    with pytest.raises(CorruptionError, match="at offset 301 is listed where offset 300 belongs"):
        next(checked)
