"""bench.chunk_sizes' pure parts: the chunker settings it derives and its disk estimate."""

from __future__ import annotations

from bench.chunk_sizes import REFERENCE_KIB, disk_estimate, settings_for
from casstor_ops.store.schema import StoreSettings


def test_the_reference_average_is_the_store_default_and_others_keep_its_proportions() -> None:
    assert settings_for(REFERENCE_KIB) == StoreSettings()
    small = settings_for(8)
    assert (small.chunk_min, small.chunk_avg, small.chunk_max) == (2730, 8192, 43690)
    assert small.normalized_chunking == StoreSettings().normalized_chunking


def test_the_disk_estimate_counts_two_rows_per_unique_block_one_per_block_and_one_per_file() -> None:
    estimate = disk_estimate(stored=1_000, unique_blocks=10, blocks=30, files=2)
    assert estimate["rows"] == 2 * 10 + 30 + 2
    assert estimate["disk_bytes"] == 1_000 + 10 * (91.9 + 86.9) + 30 * 52.9 + 2 * 82.0
