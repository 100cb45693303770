"""references: referenced/stored/garbage/missing block sets and stale block lists, on rows written directly."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from cassandra.util import uuid_from_time

from casstor_ops.spark.references import (garbage_blocks, head_block_lists, missing_blocks, referenced_blocks,
                                    stale_block_lists, stored_blocks, unindexed_blocks, version_millis)
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS

from .support import write_head


def h(n: int) -> bytes:
    return bytes([n]) * 32


def write_block(cql, n: int, size: int, index: bool = True) -> None:
    cql.execute(cql.prepare(f"INSERT INTO {DATA_KS}.blocks (hash, size, content) VALUES (?, ?, ?)"),
                (h(n), size, b"x" * size))
    if index:
        cql.execute(cql.prepare(f"INSERT INTO {DATA_KS}.existing_blocks (hash, size) VALUES (?, ?)"), (h(n), size))


def write_version(cql, file_id: str, blocks: list[tuple[int, int]], age_s: float = 0.0, head: bool = True):
    version = uuid_from_time(time.time() - age_s)
    insert = cql.prepare(f"INSERT INTO {META_KS}.file_blocks (id, version, block_offset, hash, size) "
                         f"VALUES (?, ?, ?, ?, ?)")
    offset = 0
    for n, size in blocks:
        cql.execute(insert, (file_id, version, offset, h(n), size))
        offset += size
    if head:
        write_head(cql, file_id, version, offset, h(0), len(blocks))
    return version


def as_dict(df, value: str) -> dict[bytes, int]:
    return {bytes(r.hash): r[value] for r in df.collect()}


def test_block_sets(empty_store, spark) -> None:
    cql = empty_store
    for n in (1, 2, 3, 4):
        write_block(cql, n, 100 * n)
    write_block(cql, 5, 500, index=False)                       # content without an index row
    write_version(cql, "a", [(1, 100), (2, 200), (1, 100)], age_s=3600)
    write_version(cql, "b", [(2, 200), (6, 600)])               # block 6 was never stored
    write_version(cql, "a", [(3, 300)], age_s=7200, head=False)  # a's superseded version
    write_head(cql, "c", uuid_from_time(time.time()), 400, h(0), 1, lone=h(4))  # its row names its one block

    referenced = referenced_blocks(spark)
    stored = stored_blocks(spark)
    assert as_dict(referenced, "refs") == {h(1): 2, h(2): 2, h(4): 1, h(6): 1}
    assert as_dict(stored, "size") == {h(1): 100, h(2): 200, h(3): 300, h(4): 400}
    assert as_dict(garbage_blocks(stored, referenced), "size") == {h(3): 300}
    assert as_dict(missing_blocks(stored, referenced), "size") == {h(6): 600}
    assert as_dict(unindexed_blocks(spark), "size") == {h(5): 500}
    assert head_block_lists(spark).count() == 6


def test_stale_block_lists_are_old_non_heads(empty_store, spark) -> None:
    cql = empty_store
    write_version(cql, "f", [(1, 10)], age_s=3600)
    old = write_version(cql, "f", [(2, 10), (3, 10)], age_s=1800, head=False)
    write_version(cql, "f", [(4, 10)], age_s=5, head=False)           # too young to be garbage
    cutoff = datetime.now(timezone.utc) - timedelta(seconds=60)
    rows = stale_block_lists(spark, cutoff).collect()
    assert [(r.id, r.version, r.rows) for r in rows] == [("f", str(old), 2)]


def test_version_millis_matches_the_timeuuid(spark) -> None:
    when = 1_700_000_000.123
    df = spark.createDataFrame([(str(uuid_from_time(when)),)], ["version"])
    assert df.select(version_millis().alias("ms")).first().ms == 1_700_000_000_123
