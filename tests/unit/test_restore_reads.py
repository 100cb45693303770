"""How many blocks one restore read asks for: about READ_BYTES of the file's mean block, 1 to 16."""

from __future__ import annotations

import uuid

import pytest

from casstor_ops.store.engine.restore import BLOCKS_PER_READ, READ_BYTES, default_blocks_per_read
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
