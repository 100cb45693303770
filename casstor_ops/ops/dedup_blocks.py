"""Per-block facts of the dedup report: who names each block, first and from where, and what it costs stored.

One shuffle over the heads' block lists gives, for every block, the
figures every other part of the report aggregates (sharing per prefix,
reference-count classes, growth over commit time), side by side with the
index row (:func:`~casstor_ops.spark.references.block_inventory`: the same
definitions of referenced, garbage and missing as reclaim and verify).

Columns of :func:`block_facts` (one row per block stored or referenced):

* ``hash``; ``size`` / ``stored_size`` / ``indexed``: the index row (null
  when the block is not stored); ``refs``, ``ref_size``: how often heads
  name it and its size there (null when no head names it);
* ``lo`` / ``hi``: the smallest and largest prefix (:func:`prefix_of` at the
  report's depth) among the heads that name it: equal when only files of
  one prefix name the block, i.e. the block is *exclusive* to that prefix;
* ``first_ms`` / ``first_id``: the earliest head that names it, by
  ``committed_at`` (Unix ms), ties broken by the smaller file ID;
* ``stored_bytes``: what the index says the block takes, after compression
  (its raw size for an index row without a stored size; 0 when not stored);
* ``blocks``: 1 (a block).

Inline files (:mod:`casstor_ops.store.engine.inline`) name no block, but their
content is stored bytes all the same. :func:`inline_facts` gives each one a
row of the same shape with ``blocks`` 0: content stored once (``indexed``,
its ``stored_size``) and named once, by its own file alone (``refs`` 1,
``lo`` = ``hi`` its prefix, ``first_*`` its head), never shared, since every
version of every ID keeps its own copy. Aggregates of bytes over facts and
those rows together count it exactly once, where its file is; aggregates of
blocks count ``blocks``, or leave those rows out.

Example::

    >>> facts = block_facts(spark, head_references(spark, depth=2))     # doctest: +SKIP
    >>> facts.where("lo = hi").groupBy("lo").sum("stored_bytes")         # doctest: +SKIP
    >>> contents = facts.unionByName(inline_facts(files, depth=2))      # doctest: +SKIP

Lazy like :mod:`casstor_ops.spark.references`: Cassandra is read, and its
errors surface, when an action runs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from casstor_ops.spark.references import (block_inventory, head_block_lists, is_inline, referenced_blocks,
                                          stored_blocks)

ROOT_PREFIX = "(top level)"


def prefix_of(depth: int, column: str = "id") -> Column:
    """The first ``depth`` path components of a file ID that are directories ('a/b/c.txt', 1 -> 'a').

    A file higher up than ``depth`` gets the directories it has ('a/x', 2 ->
    'a'); one with none gets :data:`ROOT_PREFIX`. So the prefixes of one
    depth split the files into disjoint groups.
    """
    parts = F.split(F.col(column), "/")
    dirs = F.least(F.lit(depth), F.size(parts) - 1)
    prefix = F.concat_ws("/", F.slice(parts, 1, F.greatest(dirs, F.lit(0))))
    return F.when(prefix == "", F.lit(ROOT_PREFIX)).otherwise(prefix)


def head_references(spark: SparkSession, depth: int) -> DataFrame:
    """``(id, hash, size, committed_ms, prefix)``: one row per block of each head's block list."""
    return head_block_lists(spark, "committed_at").select(
        "id", "hash", "size", F.unix_millis("committed_at").alias("committed_ms"), prefix_of(depth).alias("prefix"))


def block_facts(spark: SparkSession, references: DataFrame) -> DataFrame:
    """The per-block facts (module docstring) of :func:`head_references` ``references``."""
    first = F.min(F.struct(F.col("committed_ms").alias("ms"), F.col("id").alias("id"))).alias("first")
    referenced = referenced_blocks(spark, F.min("prefix").alias("lo"), F.max("prefix").alias("hi"), first,
                                   lists=references)
    inventory = block_inventory(stored_blocks(spark, "stored_size"), referenced)
    stored = F.when(F.col("indexed"), F.coalesce("stored_size", "size")).otherwise(F.lit(0)).cast("long")
    return inventory.select("hash", "size", "stored_size", "indexed", "refs", "ref_size", "lo", "hi",
                            F.col("first.ms").alias("first_ms"), F.col("first.id").alias("first_id"),
                            stored.alias("stored_bytes"), F.lit(1).alias("blocks"))


def inline_facts(files: DataFrame, depth: int) -> DataFrame:
    """Rows shaped like :func:`block_facts`'s for the inline files among ``files`` (heads with ``id``, ``size``,
    ``blocks``, ``stored_size``, ``committed_ms``): each one's content, exclusive to it (module docstring)."""
    prefix = prefix_of(depth)
    return files.where(is_inline()).select(
        F.lit(None).cast("binary").alias("hash"), "size", "stored_size", F.lit(True).alias("indexed"),
        F.lit(1).cast("long").alias("refs"), F.col("size").alias("ref_size"), prefix.alias("lo"), prefix.alias("hi"),
        F.col("committed_ms").alias("first_ms"), F.col("id").alias("first_id"),
        F.coalesce("stored_size", F.lit(0)).cast("long").alias("stored_bytes"), F.lit(0).alias("blocks"))


def long_sum(column: str | Column, name: str) -> Column:
    """``sum(column)`` as a 64-bit integer, 0 over no rows (sizes are ``int`` columns: a narrow sum overflows)."""
    value = F.col(column) if isinstance(column, str) else column
    return F.coalesce(F.sum(value.cast("long")), F.lit(0)).alias(name)


def count_if(condition: Column, name: str) -> Column:
    """The number of rows where ``condition`` holds."""
    return F.count(F.when(condition, True)).alias(name)
