"""Block and file hashes (no database needed)."""

import hashlib
import os

from casstor_ops.store.blocks.hashing import block_hash, file_hash, file_hasher


def test_block_hash_is_blake2b_256():
    data = os.urandom(100_000)
    assert block_hash(data) == hashlib.blake2b(data, digest_size=32).digest()
    assert block_hash(memoryview(data)[10:20]) == hashlib.blake2b(data[10:20], digest_size=32).digest()
    assert len(block_hash(b"")) == 32


def test_file_hash_is_blake2b_256_of_the_concatenated_block_hashes():
    hashes = [block_hash(os.urandom(1000)) for _ in range(5)]
    assert file_hash(hashes) == hashlib.blake2b(b"".join(hashes), digest_size=32).digest()
    streamed = file_hasher()
    for digest in hashes:
        streamed.update(digest)
    assert streamed.digest() == file_hash(iter(hashes))


def test_file_hash_depends_on_block_order_and_of_nothing_is_hash_of_empty():
    a, b = block_hash(b"a"), block_hash(b"b")
    assert file_hash([a, b]) != file_hash([b, a])
    assert file_hash([]) == block_hash(b"")
