"""Block codecs without a node: what is compressed, what is kept raw, and that a bad block never decodes."""

from __future__ import annotations

import os
import random
import threading
import tracemalloc

import pytest
import zstandard

from casstor_ops.errors import CasstorError
from casstor_ops.store.blocks.codec import (MAX_BLOCK_BYTES, MIN_SAVING, SMALL_BLOCK_BYTES, ZSTD, BlockCodec,
                                            DamagedBlock, decode)

TEXT = b"".join(b"line %d of a source file, mostly the same\n" % (i % 50) for i in range(2000))


def test_compressible_blocks_are_compressed_and_decode_to_the_plaintext() -> None:
    codec, payload = BlockCodec.parse("zstd:3").encode(TEXT)
    assert codec == ZSTD and len(payload) < len(TEXT) * (1 - MIN_SAVING)
    assert decode(codec, payload, len(TEXT)) == TEXT


def test_incompressible_and_empty_blocks_are_kept_raw() -> None:
    noise = random.Random(1).randbytes(64 * 1024)
    assert BlockCodec.parse("zstd:3").encode(noise) == (None, noise)
    assert BlockCodec.parse("zstd:3").encode(b"") == (None, b"")
    assert decode(None, noise, len(noise)) == noise


def test_blocks_under_64_kib_are_compressed_three_levels_higher_and_decode_alike() -> None:
    assert [BlockCodec.parse(spec).level_for(size) for spec, size in
            [("zstd:3", SMALL_BLOCK_BYTES - 1), ("zstd:3", SMALL_BLOCK_BYTES), ("zstd:1", 1), ("zstd:18", 1)]] \
        == [6, 3, 4, 19]
    small, large = TEXT[:SMALL_BLOCK_BYTES - 1], TEXT * 2
    for block, level in ((small, 6), (large, 3)):
        codec, payload = BlockCodec.parse("zstd:3").encode(block)
        assert payload == zstandard.ZstdCompressor(level=level).compress(block)
        assert decode(codec, payload, len(block)) == block


def test_none_stores_everything_raw() -> None:
    assert BlockCodec.parse("none").encode(TEXT) == (None, TEXT)
    assert BlockCodec.parse("none").spec == "none" and BlockCodec.parse("zstd").spec == "zstd:3"


@pytest.mark.parametrize("spec", ["zstd:0", "zstd:20", "zstd:x", "lz4", "none:3", "", "ZSTD:3"])
def test_a_bad_spec_is_refused_in_one_line(spec: str) -> None:
    with pytest.raises(CasstorError, match="expected 'none' or 'zstd:LEVEL'") as refused:
        BlockCodec.parse(spec)
    assert "\n" not in str(refused.value)


def test_a_raw_block_of_the_wrong_length_is_damaged() -> None:
    with pytest.raises(DamagedBlock, match="holds 3 bytes, not 4"):
        decode(None, b"abc", 4)


@pytest.mark.parametrize("payload, what", [
    (b"not a zstd frame at all", "does not decompress"),
    (zstandard.ZstdCompressor().compress(TEXT)[:-7], "does not decompress"),       # truncated
    (zstandard.ZstdCompressor().compress(TEXT[:-1]), f"decompresses to {len(TEXT) - 1} bytes"),
])
def test_a_compressed_block_that_does_not_decode_to_its_size_is_damaged(payload: bytes, what: str) -> None:
    with pytest.raises(DamagedBlock, match=what):
        decode(ZSTD, payload, len(TEXT))


def test_an_unknown_codec_or_an_impossible_size_is_damaged() -> None:
    with pytest.raises(DamagedBlock, match="unknown codec 'brotli'"):
        decode("brotli", b"x", 1)
    with pytest.raises(DamagedBlock, match="more than any block can hold"):
        decode(ZSTD, b"x", MAX_BLOCK_BYTES + 1)
    with pytest.raises(DamagedBlock, match="more than any block can hold"):
        decode(ZSTD, b"x", 0)


def test_a_decompression_bomb_is_refused_without_allocating_what_it_claims() -> None:
    """Injects a 64 MiB frame of zeros (about 2 KiB stored) as a block listed with 48 KiB, both with and without
    the frame's content size; checks each is DamagedBlock and that decoding allocated under 1 MiB (zstandard
    alone would allocate the 64 MiB the header claims)."""
    bombs = [zstandard.ZstdCompressor(write_content_size=with_size).compress(bytes(64 << 20))
             for with_size in (True, False)]
    for bomb in bombs:
        tracemalloc.start()
        try:
            with pytest.raises(DamagedBlock):
                decode(ZSTD, bomb, 48 * 1024)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(bomb) < 8192 and peak < 1 << 20


def test_threads_compress_with_their_own_compressor() -> None:
    """Encodes from 4 threads at once (Spark tasks share one store); every payload decodes to its plaintext."""
    blocks = [TEXT + os.urandom(16) * i for i in range(40)]
    results: dict[int, tuple] = {}

    def work(first: int) -> None:
        for i in range(first, len(blocks), 4):
            results[i] = BlockCodec.parse("zstd:3").encode(blocks[i])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(decode(codec, payload, len(blocks[i])) == blocks[i] for i, (codec, payload) in results.items())
    assert len(results) == len(blocks)
