"""How many blocks one restore read asks for (about READ_BYTES of the file's mean block, 1 to 16), and what a
blocks read found, as the readers check it."""

from __future__ import annotations

import uuid

import pytest

from casstor_ops.errors import CorruptionError
from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.engine.restore import (BLOCKS_PER_READ, READ_BYTES, FoundBlock, StoredBlock, checked_blocks,
                                              default_blocks_per_read, found_blocks)
from casstor_ops.store.records import FileInfo

KIB = 1024


def _head(size: int, blocks: int) -> FileInfo:
    return FileInfo("f", uuid.uuid1(), size, b"\0" * 32, blocks, None)


@pytest.mark.parametrize("mean, expected", [(48 * KIB, 16), (16 * KIB, 16), (300 * KIB, 2), (1024 * KIB, 1),
                                            (READ_BYTES + 1, 1)])
def test_larger_blocks_mean_fewer_per_read(mean: int, expected: int) -> None:
    assert default_blocks_per_read(_head(mean * 40, 40)) == expected


def test_empty_and_tiny_files_ask_for_at_most_the_limit() -> None:
    assert default_blocks_per_read(_head(0, 0)) == BLOCKS_PER_READ
    assert default_blocks_per_read(_head(1, 1)) == BLOCKS_PER_READ


def test_a_row_without_content_is_missing_and_the_others_are_checked_where_their_list_names_them() -> None:
    plain = b"casstor " * 4096
    codec, payload = BlockCodec(3).encode(plain)
    good, emptied = block_hash(plain), block_hash(b"gone")
    found = found_blocks([(good, codec, payload), (emptied, None, None)])
    assert found == {good: FoundBlock(codec, payload)}
    assert found[good].listed(good, 10, len(plain)) == StoredBlock(codec, payload, good, 10, len(plain))
    assert checked_blocks("f", [found[good].listed(good, 0, len(plain))]) == [plain]
    with pytest.raises(CorruptionError, match="at offset 7 does not match its hash"):
        checked_blocks("f", [found[good].listed(emptied, 7, len(plain))])
