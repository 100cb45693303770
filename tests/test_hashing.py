"""Block and file hashes (no database needed)."""

import hashlib
import os

from casstor_ops.hashing import FileHashThread, block_hash, file_hasher


def test_block_hash_is_blake2b_256():
    data = os.urandom(100_000)
    assert block_hash(data) == hashlib.blake2b(data, digest_size=32).digest()
    assert block_hash(memoryview(data)[10:20]) == hashlib.blake2b(data[10:20], digest_size=32).digest()
    assert len(block_hash(b"")) == 32


def test_file_hash_of_pieces_equals_hash_of_whole():
    data = os.urandom(3_000_000)
    hasher = file_hasher()
    threaded = FileHashThread()
    for start in range(0, len(data), 700_001):
        hasher.update(data[start:start + 700_001])
        threaded.update(memoryview(data)[start:start + 700_001])
    assert hasher.digest() == threaded.digest() == block_hash(data)


def test_file_hash_thread_of_nothing_is_hash_of_empty():
    assert FileHashThread().digest() == block_hash(b"")
