"""The directory index's key arithmetic (casstor_ops.store.namespace.layout): pure, no node."""

from __future__ import annotations

import collections

import pytest

from casstor_ops.store.namespace.layout import (MAX_GENERATION, bucket_generation, bucket_of, buckets, directory_key,
                                                markers, split_id)


@pytest.mark.parametrize("file_id, expected", [("a.txt", ("", "a.txt")), ("a/", ("a/", "")),
                                               ("photos/2024/a.jpg", ("photos/2024/", "a.jpg")),
                                               ("/abs/x", ("/abs/", "x")), ("a//b", ("a//", "b"))])
def test_split_id_cuts_after_the_last_slash(file_id: str, expected: tuple[str, str]) -> None:
    assert split_id(file_id) == expected
    assert "".join(split_id(file_id)) == file_id


def test_markers_lead_from_the_root_down() -> None:
    assert markers("") == []
    assert markers("a/") == [("", "a/")]
    assert markers("a/b/c/") == [("", "a/"), ("a/", "b/"), ("a/b/", "c/")]
    assert markers("/x/") == [("", "/"), ("/", "x/")]  # an empty path segment is a marker of its own


def test_directory_key_is_never_empty() -> None:
    assert directory_key("") == "/" and directory_key("a/b/") == "/a/b/"


def test_bucket_numbers_of_every_generation_are_distinct_and_contiguous() -> None:
    seen: set[int] = set()
    for generation in range(6):
        own = [b for b in buckets(generation) if bucket_generation(b) == generation]
        assert len(own) == 1 << generation and not seen & set(own)
        seen |= set(own)
        assert sorted(seen) == buckets(generation)
    assert len(buckets(MAX_GENERATION)) == (1 << (MAX_GENERATION + 1)) - 1


def test_a_name_has_one_fixed_bucket_per_generation_within_its_range() -> None:
    for generation in range(8):
        for name in ("a", "ü.txt", "x" * 300, "\udcff-surrogate"):
            bucket = bucket_of(name, generation)
            assert bucket == bucket_of(name, generation)
            assert bucket_generation(bucket) == generation


def test_buckets_share_a_directory_evenly() -> None:
    """10,000 names in generation 4 (16 buckets): every bucket within 20 % of the mean (what keeps each partition
    near directory_rows after a split)."""
    counts = collections.Counter(bucket_of(f"file-{i:05d}.jpg", 4) for i in range(10_000))
    assert set(counts) == {b for b in buckets(4) if bucket_generation(b) == 4}
    assert max(counts.values()) < 1.2 * 625 and min(counts.values()) > 0.8 * 625
