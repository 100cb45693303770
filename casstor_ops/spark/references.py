"""Which blocks the store holds and which blocks its files point at, as Spark DataFrames.

Every figure comes from the light tables only: ``existing_blocks`` (the
index), ``versions`` (heads and their history) and ``file_blocks`` (block lists). The blob table
``blocks`` is read only by :func:`unindexed_blocks`, on request, with
small pages (a full-page scan of 64 KiB blobs ran a node out of memory).

* a *head* is a file's committed version: the newest row of its ``versions``
  partition, unless that is a delete marker;
* an *inline* head (``blocks`` 0, a size over 0: :mod:`casstor_ops.store.engine.inline`)
  keeps its content in its head row: it has no block list and names no
  block, so it makes no block referenced, missing or kept, and no list of
  it is ever stale (reclaim neither frees nor needs anything of it);
* a *retained* version is any version row but a delete marker (:func:`retained_versions`): heads, and the
  older versions forget left because a policy or snapshot keeps them;
* a block is *referenced* when the block list of some head names it (reclaim and verify: of some retained
  version);
* *stored* blocks are the index rows; *garbage* = stored - referenced;
  *missing* = referenced - stored (a corruption, or an index row lost
  by a crashed reclaim: :mod:`casstor_ops.ops.reclaim` tells the two apart).
  Both are defined here once, as conditions on the :func:`block_inventory`
  (stored and referenced blocks side by side), and reclaim's plan, verify
  and the dedup report all use these definitions;
* a *stale block list* is a ``file_blocks`` partition that is not a head
  and whose version is older than a cut-off (superseded, or never committed).

Example::

    >>> referenced = referenced_blocks(spark)                      # doctest: +SKIP
    >>> garbage = garbage_blocks(stored_blocks(spark), referenced)  # doctest: +SKIP
    >>> garbage.agg(F.count("*"), F.sum("size")).first()            # doctest: +SKIP
    Row(count(1)=12, sum(size)=593820)

Every function is lazy (a DataFrame plan); Cassandra is read when an action
runs. Failures are the connector's (``Py4JJavaError`` wrapping the driver
error) and surface when that action runs.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from casstor_ops.spark.session import read_table
from casstor_ops.store.blocks.block_list import file_hash_of
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS

# A blob page of this many rows is at most 64 MiB of the default chunker's
# 1 MiB blocks, and ~20 MiB of typical ones, on the node that serves it.
BLOB_SCAN_PAGE_ROWS = 64

# A page of head rows with content is at most this many bytes of inline content (as the blob pages' 64 MiB).
HEAD_PAGE_BYTES = 64 << 20
HEAD_PAGE_MAX_ROWS = 1000  # the connector's default page: heads without content are small rows

# A version-1 UUID counts 100 ns intervals since 1582-10-15; this is that
# count at the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


def version_ticks(column: str = "version") -> F.Column:
    """A timeuuid column (the connector reads it as text) as its 100 ns ticks since 1582: its time order."""
    v = F.col(column)
    return F.conv(F.concat(F.substring(v, 16, 3), F.substring(v, 10, 4), F.substring(v, 1, 8)), 16, 10).cast(
        "decimal(20,0)")


def version_millis(column: str = "version") -> F.Column:
    """A timeuuid column (the connector reads it as text) as Unix milliseconds.

    Pure SQL, so it runs in the JVM without Python round trips.
    """
    return ((version_ticks(column) - F.lit(_UUID_EPOCH_OFFSET)) / 10_000).cast("long")


def newest_versions(rows: DataFrame) -> DataFrame:
    """Of rows of ``versions`` (with ``id``, ``version``, ``deleted``), each ID's newest, delete markers left out."""
    newest = Window.partitionBy("id").orderBy(version_ticks().desc())
    return (rows.withColumn("_rank", F.row_number().over(newest))
            .where((F.col("_rank") == 1) & ~F.coalesce(F.col("deleted"), F.lit(False))).drop("_rank", "deleted"))


def heads(spark: SparkSession, *extra: str) -> DataFrame:
    """``(id, version, *extra)`` of every committed file (``extra``: other columns of ``versions``)."""
    return newest_versions(read_table(spark, META_KS, "versions").select("id", "version", "deleted", *extra))


def retained_versions(spark: SparkSession, *extra: str) -> DataFrame:
    """``(id, version, *extra)`` of every version row that is not a delete marker: heads and the older versions
    forget left (:mod:`casstor_ops.store.history`), which reclaim keeps the blocks and block lists of."""
    return _without_markers(read_table(spark, META_KS, "versions").select("id", "version", "deleted", *extra))


def _without_markers(rows: DataFrame) -> DataFrame:
    return rows.where(~F.coalesce(F.col("deleted"), F.lit(False))).drop("deleted")


def is_inline() -> F.Column:
    """On heads with ``blocks`` and ``size``: an inline file (content in its head row, no block list)."""
    return (F.coalesce(F.col("blocks"), F.lit(0)) == 0) & (F.coalesce(F.col("size"), F.lit(0)) > 0)


def _versions_with_content(spark: SparkSession, inline_max: int) -> DataFrame:
    """Every row of ``versions`` with ``deleted``, ``size``, ``blocks``, ``hash``, ``codec`` and ``content``.

    Pages are sized so that one holds at most :data:`HEAD_PAGE_BYTES` of
    content in a store keeping files of up to ``inline_max`` bytes inline
    (content is kept compressed or raw, so never longer than that).
    """
    rows = max(1, min(HEAD_PAGE_MAX_ROWS, HEAD_PAGE_BYTES // max(inline_max, 1)))
    return (spark.read.format("org.apache.spark.sql.cassandra")
            .options(keyspace=META_KS, table="versions", **{"spark.cassandra.input.fetch.sizeInRows": str(rows)})
            .load().select("id", "version", "deleted", "size", "blocks", _file_hash().alias("hash"), "codec",
                           "content"))


_file_hash_of = F.udf(file_hash_of, T.BinaryType())


def _file_hash() -> F.Column:
    """A version row's file hash, by :func:`casstor_ops.store.blocks.block_list.file_hash_of` (a one-block file's row
    holds none) on its ``hash`` and ``lone_block``."""
    return _file_hash_of(F.struct("hash", "lone_block"))


def retained_with_content(spark: SparkSession, inline_max: int) -> DataFrame:
    """``(id, version, size, blocks, hash, codec, content)`` of every retained version (:func:`retained_versions`):
    an inline version's content with it."""
    return _without_markers(_versions_with_content(spark, inline_max))


def head_block_lists(spark: SparkSession, *head_columns: str, head_rows: DataFrame | None = None) -> DataFrame:
    """``(id, version, block_offset, hash, size, *head_columns)``: the block lists of the heads, nothing else.

    ``head_columns`` are columns of the head row carried to each of its
    block list's rows (e.g. ``"committed_at"``); ``head_rows`` is a reading
    of :func:`heads` with them (default: a new one).
    """
    lists = read_table(spark, META_KS, "file_blocks").select("id", "version", "block_offset", "hash", "size")
    head_rows = heads(spark, *head_columns) if head_rows is None else head_rows
    return (lists.unionByName(lone_block_lists(spark, lists.schema))
            .join(head_rows.select("id", "version", *head_columns), ["id", "version"], "inner"))


def lone_block_lists(spark: SparkSession, list_schema: T.StructType) -> DataFrame:
    """``(id, version, block_offset, hash, size)`` in ``file_blocks``' types: the one-row block list each version
    row that names its only block carries (:mod:`casstor_ops.store.blocks.block_list`); such a version has no
    ``file_blocks`` partition."""
    return (read_table(spark, META_KS, "versions").where(F.col("lone_block").isNotNull())
            .select("id", "version", F.lit(0).cast(list_schema["block_offset"].dataType).alias("block_offset"),
                    F.col("lone_block").alias("hash"), F.col("size").cast(list_schema["size"].dataType)))


def referenced_blocks(spark: SparkSession, *extra: F.Column, lists: DataFrame | None = None) -> DataFrame:
    """``(hash, size, refs, *extra)``: each block named by a head, and how many times it is named.

    ``extra`` are further aggregates over the block's references (e.g.
    ``F.min("committed_at")``), computed in the same shuffle; ``lists`` is
    :func:`head_block_lists` (the default) with the columns they need.
    """
    lists = head_block_lists(spark) if lists is None else lists
    return lists.groupBy("hash").agg(F.first("size").alias("size"), F.count(F.lit(1)).alias("refs"), *extra)


def stored_blocks(spark: SparkSession, *extra: str) -> DataFrame:
    """``(hash, size, *extra)`` of every indexed block (``existing_blocks``; e.g. ``extra`` ``"stored_size"``)."""
    return read_table(spark, DATA_KS, "existing_blocks").select("hash", "size", *extra)


def block_rows(spark: SparkSession, *columns: str) -> DataFrame:
    """``columns`` of every row of the blob table, split by token range, in small pages.

    The only reader of ``blocks``: pages are :data:`BLOB_SCAN_PAGE_ROWS`
    rows, and only the named columns are fetched (leave out ``content``
    unless it is needed), but every node still reads its blob SSTables.
    """
    return (spark.read.format("org.apache.spark.sql.cassandra")
            .options(keyspace=DATA_KS, table="blocks",
                     **{"spark.cassandra.input.fetch.sizeInRows": str(BLOB_SCAN_PAGE_ROWS)})
            .load().select(*columns))


def unindexed_blocks(spark: SparkSession) -> DataFrame:
    """``(hash, size)`` of block content rows that have no index row.

    A store killed between its content write and its index write, or a
    reclaim killed between its index delete and its content delete, leaves
    them. It scans the blob table (:func:`block_rows`), so it is opt-in.
    """
    return block_rows(spark, "hash", "size").join(stored_blocks(spark).select("hash"), "hash", "left_anti")


def block_inventory(stored: DataFrame, referenced: DataFrame) -> DataFrame:
    """``(hash, size, indexed, refs, ref_size)``: every block stored or referenced, once.

    ``stored`` is ``(hash, size)`` with an optional boolean ``indexed``
    (default true: an index row; false marks content found without one, as
    reclaim's blob scan adds); ``referenced`` is :func:`referenced_blocks`.
    ``size`` is null for a block only referenced, ``refs`` for one only stored.
    Other columns of both sides (e.g. ``stored_size``, aggregates of
    :func:`referenced_blocks`) are kept.
    """
    if "indexed" not in stored.columns:
        stored = stored.withColumn("indexed", F.lit(True))
    return stored.join(referenced.withColumnRenamed("size", "ref_size"), "hash", "full_outer")


def is_garbage() -> F.Column:
    """On a :func:`block_inventory`: stored (content or index row) and named by no head."""
    return F.col("size").isNotNull() & F.col("refs").isNull()


def is_missing() -> F.Column:
    """On a :func:`block_inventory`: named by a head and without an index row."""
    return F.col("refs").isNotNull() & ~F.coalesce(F.col("indexed"), F.lit(False))


def garbage_blocks(stored: DataFrame, referenced: DataFrame) -> DataFrame:
    """``(hash, size)``: stored blocks no head names."""
    return block_inventory(stored, referenced).where(is_garbage()).select("hash", "size")


def missing_blocks(stored: DataFrame, referenced: DataFrame) -> DataFrame:
    """``(hash, size, refs)``: blocks some head names that are not stored."""
    return (block_inventory(stored, referenced).where(is_missing())
            .select("hash", F.col("ref_size").alias("size"), "refs"))


def stale_block_lists(spark: SparkSession, older_than: datetime, head_rows: DataFrame | None = None) -> DataFrame:
    """``(id, version, rows)``: block lists that are not a head and were started before ``older_than``.

    ``head_rows`` is a reading of :func:`heads` (default: a new one). A
    caller that also computes the referenced blocks passes the reading
    those used: a version overwritten between two readings would otherwise
    count as a head for its blocks and as stale for its block list.
    """
    cutoff_ms = int(older_than.astimezone(timezone.utc).timestamp() * 1000)
    lists = (read_table(spark, META_KS, "file_blocks").select("id", "version")
             .groupBy("id", "version").agg(F.count(F.lit(1)).alias("rows")))
    head_rows = heads(spark) if head_rows is None else head_rows
    return (lists.join(head_rows.select("id", "version"), ["id", "version"], "left_anti")
            .where(version_millis() < F.lit(cutoff_ms)))
