"""Inline files' pure logic: which files fit, how the content is kept and checked, what a head write binds."""

from __future__ import annotations

import os
import uuid

import pytest
from cassandra.query import UNSET_VALUE

from casstor_ops.errors import CasstorError, CorruptionError
from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.engine import inline
from casstor_ops.store.records import FileInfo, InlineContent
from casstor_ops.store.schema import StoreSettings

ZSTD = BlockCodec.parse("zstd:3")


def test_files_of_one_byte_to_inline_max_fit_and_none_without_it() -> None:
    settings = StoreSettings(inline_max=4096)
    assert [inline.fits(settings, n) for n in (0, 1, 4096, 4097)] == [False, True, True, False]
    assert not inline.fits(StoreSettings(), 1)


def test_inline_max_above_the_chunk_minimum_is_refused_in_one_line() -> None:
    with pytest.raises(CasstorError, match=r"inline max 65537: takes 0 \(no inline files\) to the chunk minimum"):
        StoreSettings(inline_max=64 * 1024 + 1)
    with pytest.raises(CasstorError):
        StoreSettings(inline_max=-1)


def test_the_file_hash_is_the_one_block_files() -> None:
    assert inline.inline_hash(b"abc") == file_hash([block_hash(b"abc")])


def test_content_is_compressed_when_it_shrinks_and_read_back_checked() -> None:
    text, noise = b"inline " * 1000, os.urandom(5000)
    packed, raw = inline.encode(ZSTD, text), inline.encode(ZSTD, noise)
    assert packed.codec == "zstd" and len(packed.payload) < len(text) // 10
    assert raw == InlineContent(None, noise)
    assert inline.plaintext(len(text), inline.inline_hash(text), packed) == text
    assert inline.plaintext(len(noise), inline.inline_hash(noise), raw) == noise


@pytest.mark.parametrize("stored, size, wrong", [
    (InlineContent(None, b"hellp"), 5, "does not match its file hash"),
    (InlineContent(None, b"hell"), 5, "holds 4 bytes, not 5"),
    (InlineContent("lz77", b"hello"), 5, "unknown codec"),
    (InlineContent("zstd", b"not zstd at all"), 5, "does not decompress"),
], ids=["flipped", "short", "unknown-codec", "bad-zstd"])
def test_damaged_content_says_what_is_wrong(stored: InlineContent, size: int, wrong: str) -> None:
    assert wrong in inline.plaintext(size, inline.inline_hash(b"hello"), stored)
    head = FileInfo("a", uuid.uuid1(), size, inline.inline_hash(b"hello"), 0, None)
    with pytest.raises(CorruptionError, match=f"'a': its content .*{wrong}.*cannot be restored"):
        inline.checked(head, stored)


def test_a_head_write_binds_the_content_null_or_nothing() -> None:
    stored = InlineContent("zstd", b"xyz")
    assert inline.head_columns(stored, inline_store=True) == (b"xyz", "zstd", 3)
    assert inline.head_columns(None, inline_store=True) == (None, None, None)  # clears an inline version
    assert inline.head_columns(None, inline_store=False) == (UNSET_VALUE,) * 3  # no tombstones


def test_an_inline_head_is_one_with_no_blocks_and_some_bytes() -> None:
    def head(size: int, blocks: int) -> FileInfo:
        return FileInfo("a", uuid.uuid1(), size, b"", blocks, None)
    assert head(10, 0).is_inline and not head(0, 0).is_inline and not head(10, 1).is_inline


def test_an_inline_store_reports_no_block_and_every_byte_new() -> None:
    result = inline.inline_result("a", 9, InlineContent("zstd", b"abc"), b"h", 0.0)
    assert (result.blocks, result.new_blocks, result.new_bytes, result.new_stored_bytes) == (0, 0, 9, 3)
