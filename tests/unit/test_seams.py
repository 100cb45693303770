"""The seams' runs (casstor_ops.store.blocks.seams): parts chunked on their own, then cut again, are one file's blocks."""

from __future__ import annotations

import io
import random

import pytest

from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.blocks.seams import READ_AHEAD, SEAMS_AT_ONCE, Recut, seams_of
from casstor_ops.store.schema import StoreSettings

# Small blocks, so that a few hundred KiB hold many seams and blocks.
SETTINGS = StoreSettings(chunk_min=1024, chunk_avg=4096, chunk_max=16384)


def _cut(data: bytes) -> list[bytes]:
    return [bytes(block) for block in chunks(io.BytesIO(data), SETTINGS)]


def _recut(hashes, sizes, parts, read) -> tuple[Recut, list]:
    cut = Recut(hashes, sizes, seams_of(parts), SETTINGS, read)
    return cut, list(cut)


def _reader(stored: dict[bytes, bytes], asked: list[bytes] | None = None, reads: list[list[bytes]] | None = None):
    """A BlockReader of ``stored``, noting each hash asked for in ``asked`` and each read's hashes in ``reads``."""
    def read(wanted: list[bytes]):
        (asked if asked is not None else []).extend(wanted)
        (reads if reads is not None else []).append(wanted)
        return lambda: {digest: stored[digest] for digest in wanted}

    return read


def _parts(data: bytes, sizes: list[int]) -> tuple[list[bytes], list[int], list[int], dict[bytes, bytes]]:
    """``data`` in parts of ``sizes`` (the last takes the rest), each chunked as a file: its hashes, block sizes,
    part sizes, and a store of the blocks by hash."""
    hashes, block_sizes, part_sizes, stored = [], [], [], {}
    start = 0
    for size in sizes + [len(data)]:
        part = data[start:start + size]
        start += len(part)
        part_sizes.append(len(part))
        for block in _cut(part):
            stored[block_hash(block)] = block
            hashes.append(block_hash(block))
            block_sizes.append(len(block))
        if start == len(data):
            break
    return hashes, block_sizes, part_sizes, stored


@pytest.mark.parametrize("data", [random.Random(1).randbytes(600_000), bytes(300_000),
                                  (random.Random(2).randbytes(5000) * 80)], ids=["random", "zeros", "repeated"])
@pytest.mark.parametrize("part_sizes", [[50_000] * 11, [20_001, 77_777, 1, 0, 150_000], [3000, 3000, 3000]],
                         ids=["even", "uneven-with-tiny-and-empty", "parts-smaller-than-a-block"])
def test_parts_cut_again_at_their_seams_are_one_files_blocks(data, part_sizes):
    hashes, sizes, parts, stored = _parts(data, part_sizes)
    cut, blocks = _recut(hashes, sizes, parts, _reader(stored))
    whole = _cut(data)
    assert [block.digest for block in blocks] == [block_hash(block) for block in whole]
    assert [block.size for block in blocks] == [len(block) for block in whole]
    for block in blocks:  # a block a run cut comes with its content (the first time), a part's kept one without
        again = cut.content(block.digest)  # None for a part's block, unless a run cut the same bytes too
        assert (again is None and block.digest in stored) or block_hash(again) == block.digest
        assert block.content is None or block_hash(block.content) == block.digest


def test_a_run_reads_only_near_its_seam_and_ends_where_the_cuts_meet_again():
    data = random.Random(3).randbytes(2_000_000)
    hashes, sizes, parts, stored = _parts(data, [500_000, 500_000, 500_000])
    asked: list[bytes] = []
    cut, blocks = _recut(hashes, sizes, parts, _reader(stored, asked))
    assert [block.digest for block in blocks] == [block_hash(block) for block in _cut(data)]
    assert len(set(asked)) < len(hashes) / 10  # a few blocks around each of three seams, of ~490
    assert cut.read_bytes < 3 * 8 * SETTINGS.chunk_avg
    # The parts' blocks from each run's end to the next seam are kept as they were.
    assert sum(block.content is None for block in blocks) > 0.9 * len(blocks)


def test_seams_are_read_a_window_at_a_time_so_a_complete_of_many_parts_holds_little():
    data = random.Random(5).randbytes(3_000_000)
    hashes, sizes, parts, stored = _parts(data, [30_000] * 99)
    reads: list[list[bytes]] = []
    cut, blocks = _recut(hashes, sizes, parts, _reader(stored, reads=reads))
    assert [block.digest for block in blocks] == [block_hash(block) for block in _cut(data)]
    assert max(map(len, reads)) <= SEAMS_AT_ONCE * READ_AHEAD  # 98 seams: at most a window's first blocks at once


def test_an_object_of_one_part_sent_again_and_again_reads_one_seam():
    body = random.Random(6).randbytes(30_000)
    data = body * 40
    hashes, sizes, parts, stored = _parts(data, [len(body)] * 39)
    asked: list[bytes] = []
    cut, blocks = _recut(hashes, sizes, parts, _reader(stored, asked))
    assert [block.digest for block in blocks] == [block_hash(block) for block in _cut(data)]
    assert len(set(asked)) <= 2 * READ_AHEAD  # the parts' blocks are the same at every seam: one run, remembered
    given = [block for block in blocks if block.content is not None]
    assert len(given) == len({block.digest for block in given})  # each cut block's content once


def test_one_part_or_none_reads_nothing_and_a_failed_read_propagates():
    data = random.Random(4).randbytes(100_000)
    hashes, sizes, parts, stored = _parts(data, [])

    def never(wanted):
        raise AssertionError(f"read {len(wanted)} blocks")

    assert [block.digest for block in _recut(hashes, sizes, parts, never)[1]] == hashes
    assert _recut([], [], [0], never)[1] == []
    hashes, sizes, parts, stored = _parts(data, [40_000])

    def vanished(wanted):
        raise LookupError("a part's block is gone")

    with pytest.raises(LookupError):
        _recut(hashes, sizes, parts, vanished)


def test_seams_past_the_budget_keep_the_parts_cuts():
    data = random.Random(8).randbytes(400_000)
    hashes, sizes, parts, stored = _parts(data, [100_000] * 3)

    def never(wanted):
        raise AssertionError(f"read {len(wanted)} blocks")

    blocks = list(Recut(hashes, sizes, seams_of(parts), SETTINGS, never, budget_s=0))
    assert [(block.digest, block.size, block.content) for block in blocks] == list(zip(hashes, sizes, [None] * 999))


def test_seams_are_where_parts_meet():
    assert seams_of([5, 5, 2]) == [5, 10]
    assert seams_of([7]) == []
