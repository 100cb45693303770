"""A tree restore's batches of small files and its block reads: grouped by count and bytes, order kept."""

from __future__ import annotations

import uuid
from pathlib import Path

from casstor_ops.store.records import FileInfo
from casstor_ops.store.bulk.batch_restore import SMALL_FILE_BYTES, batched, batches, read_groups
from casstor_ops.store.trees.temporary import sync_files


def _head(name: str, size: int, blocks: int = 1) -> FileInfo:
    return FileInfo(name, uuid.uuid1(), size, b"\0" * 32, blocks, None)


def test_batches_keep_the_order_and_cut_at_the_file_count() -> None:
    heads = [_head(f"f{i}", 10) for i in range(7)]
    cut = list(batches(heads, max_files=3, max_bytes=1000))
    assert [[h.id for h in batch] for batch in cut] == [["f0", "f1", "f2"], ["f3", "f4", "f5"], ["f6"]]


def test_batches_cut_at_the_bytes_and_a_larger_file_goes_alone() -> None:
    sizes = [5, 5, 5, 30, 2, 0]
    cut = list(batches([_head(f"f{i}", s) for i, s in enumerate(sizes)], max_files=100, max_bytes=10))
    assert [[h.size for h in batch] for batch in cut] == [[5, 5], [5], [30], [2, 0]]
    assert list(batches([])) == []


def test_read_groups_cut_at_the_bytes_and_the_block_count() -> None:
    sizes = {bytes([i]): size for i, size in enumerate([600, 600, 100, 100, 100, 2000, 1])}
    assert read_groups(sizes, max_blocks=2, max_bytes=1000) == [
        [b"\0"], [b"\1", b"\2"], [b"\3", b"\4"], [b"\5"], [b"\6"]]
    assert read_groups(sizes, max_blocks=100, max_bytes=10_000) == [list(sizes)]
    assert read_groups({}) == []


def test_only_small_block_stored_files_are_batched() -> None:
    assert batched(_head("a", 24_000)) and batched(_head("empty", 0, blocks=0))
    assert not batched(_head("inline", 500, blocks=0))  # an inline file: its content is its head's
    assert not batched(_head("big", SMALL_FILE_BYTES + 1, blocks=30))


def test_sync_files_flushes_each_file_system_once(tmp_path: Path) -> None:
    """sync_files on files of one directory returns once they are flushed; nothing to flush is no error."""
    files = [open(tmp_path / f"f{i}", "wb") for i in range(3)]
    for file in files:
        file.write(b"x")
        file.flush()
    sync_files(files)
    sync_files([])
    for file in files:
        file.close()
    assert [p.read_bytes() for p in sorted(tmp_path.iterdir())] == [b"x"] * 3
