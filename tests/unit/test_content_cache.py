"""The server's content cache: least recently used first out, bounded in bytes, small files only."""

from __future__ import annotations

from casstor_ops.serve.content_cache import ContentCache


def _hash(name: str) -> bytes:
    return name.encode().ljust(32, b".")


def test_the_least_recently_used_go_first_once_the_total_passes_the_bound() -> None:
    cache = ContentCache(max_bytes=30, max_file_bytes=10)
    for name in "abc":
        cache.put(_hash(name), name.encode() * 10)
    assert cache.get(_hash("a")) == b"a" * 10  # now the most recently used
    cache.put(_hash("d"), b"d" * 10)
    assert cache.get(_hash("b")) is None
    assert [cache.get(_hash(name)) for name in "acd"] == [b"a" * 10, b"c" * 10, b"d" * 10]
    assert cache.size_bytes == 30


def test_larger_files_and_a_zero_bound_keep_nothing() -> None:
    cache = ContentCache(max_bytes=100, max_file_bytes=10)
    cache.put(_hash("big"), b"x" * 11)
    assert cache.get(_hash("big")) is None and cache.size_bytes == 0
    none = ContentCache(max_bytes=0, max_file_bytes=1 << 20)
    none.put(_hash("a"), b"a")
    assert none.get(_hash("a")) is None and none.size_bytes == 0


def test_an_empty_file_is_kept_and_a_second_put_of_a_hash_changes_nothing() -> None:
    cache = ContentCache(max_bytes=100, max_file_bytes=10)
    cache.put(_hash("empty"), b"")
    assert cache.get(_hash("empty")) == b""
    cache.put(_hash("a"), b"a")
    cache.put(_hash("a"), b"a")
    assert cache.size_bytes == 1
