"""The dedup report: what the store holds, who shares it, what deleting would free, how it grew.

:func:`compute` runs the figures as Spark aggregations over the light
tables (``files``, ``file_blocks``, ``existing_blocks``; never the blob
table) and collects only small results (one row per prefix, class, time
bin, or the top N): a :class:`~casstor_ops.ops.dedup_report.DedupReport`
that :mod:`casstor_ops.ops.dedup_output` writes as JSON, CSV, PNG and HTML.
Every byte total is summed as a 64-bit integer: ``existing_blocks`` and
``file_blocks`` keep sizes in ``int`` columns, and a sum in that type
overflows past 2 GiB (the first prototype printed a negative total).

Inline files (:mod:`casstor_ops.store.engine.inline`: a small file's content in its
head row, no block list) follow one rule everywhere: **an inline file's
content is stored bytes exclusive to that file**, never shared (every
version of every ID keeps its own copy) and **never a block**. So it counts,
once per file, in every byte figure of stored data (``unique_bytes`` its
size, ``stored_bytes`` its ``stored_size``, as ``casstor stats``), in its
prefix's unique and exclusive bytes (removing the file frees it) and in the
growth and new bytes at its own head's commit and prefix; and in no block
figure (``unique_blocks``, ``referenced_*``, ``block_references``, garbage,
missing, the ``sharing`` classes, ``block_sizes``, ``most_shared_blocks``,
``exclusive_blocks``, ``new_blocks``). A store of inline files only has
every block figure 0 and a dedup ratio of 1.0 (its unique bytes are its
logical bytes): :func:`~casstor_ops.ops.dedup_blocks.inline_facts`.

Totals (``DedupReport.totals``):

* ``files``: committed files (heads); ``logical_bytes``: the sum of their sizes;
* ``unique_blocks`` / ``unique_bytes``: the index rows, i.e. what is stored once (after dedup),
  and (bytes only) the inline files' sizes;
* ``stored_bytes``: those blocks as kept (after compression; a block indexed
  without its stored size counts as raw), and the inline files' stored sizes;
* ``dedup_ratio`` = logical / unique bytes, ``compression_ratio`` = unique /
  stored bytes (1.0 for an empty store, as ``casstor stats``);
* ``referenced_blocks`` / ``referenced_bytes`` / ``block_references``: distinct
  blocks the heads name, their size once each, and how many times they are named;
* ``garbage_blocks`` / ``garbage_bytes``: stored blocks no head names (reclaim frees them);
* ``missing_blocks``: blocks a head names that are not stored (``jobs/verify.py`` explains them);
* ``non_head_block_lists``: block lists that are not a head: superseded versions
  and stores in progress or abandoned.

Tables: ``prefixes`` and ``sharing`` (:mod:`~casstor_ops.ops.dedup_sharing`:
exclusive and shared bytes per prefix at ``depth``, the reference-count
classes), ``growth``, ``new_bytes_by_prefix`` and ``new_bytes_over_time``
(:mod:`~casstor_ops.ops.dedup_growth`: the live data by commit time),
``block_sizes`` (histogram of stored block sizes), ``most_shared_blocks``
(top blocks by reference count), ``largest_files``, ``forgetting``
(:mod:`~casstor_ops.ops.dedup_forgetting`: what forget would drop and free,
per retention policy and per snapshot).

Example::

    >>> report = compute(spark, top=10, depth=2)        # doctest: +SKIP
    >>> report.totals["dedup_ratio"]                     # doctest: +SKIP
    3.41
    >>> report.tables["prefixes"].exclusive_stored_bytes.iloc[0]   # doctest: +SKIP
    73400320

Failures: an uninitialised store or bad arguments raise
:class:`~casstor_ops.errors.CasstorError`; Cassandra failures surface from
the Spark action as the connector's error.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import TypeVar

import pandas as pd
from cassandra.cluster import Session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from casstor_ops.cluster.connection import connect, endpoint_from_env
from casstor_ops.errors import CasstorError
from casstor_ops.ops.dedup_blocks import block_facts, count_if, head_references, inline_facts, long_sum
from casstor_ops.ops.dedup_forgetting import ForgetRules, forgetting_table, read_rules
from casstor_ops.ops.dedup_growth import growth_tables
from casstor_ops.ops.dedup_report import COLUMNS, DedupReport
from casstor_ops.ops.dedup_sharing import prefix_table, sharing_table
from casstor_ops.spark.references import heads, is_garbage, is_inline, is_missing, stale_block_lists
from casstor_ops.store.records import StoreStats
from casstor_ops.store.schema import StoreSettings, require_settings

HISTOGRAM_BINS = 16
T = TypeVar("T")


def store_settings() -> StoreSettings:
    """The recorded settings of the store the environment names; CasstorError if it is not initialised."""
    return _read(require_settings)


def _read(reader: Callable[[Session], T]) -> T:
    """``reader``'s answer on a driver session to the store the environment names."""
    session = connect(endpoint_from_env(), start=False)
    try:
        return reader(session)
    finally:
        session.cluster.shutdown()


def _totals(spark: SparkSession, files: DataFrame, facts: DataFrame) -> dict:
    f = files.agg(F.count(F.lit(1)).alias("n"), long_sum("size", "size"),
                  long_sum(F.when(is_inline(), F.col("size")), "inline_bytes"),
                  long_sum(F.when(is_inline(), F.col("stored_size")), "inline_stored")).first()
    indexed, referenced = F.coalesce(F.col("indexed"), F.lit(False)), F.col("refs").isNotNull()
    b = facts.agg(
        count_if(indexed, "unique_blocks"), long_sum(F.when(indexed, F.col("size")), "unique_bytes"),
        long_sum("stored_bytes", "stored_bytes"),
        count_if(referenced, "referenced_blocks"), long_sum("ref_size", "referenced_bytes"),
        long_sum("refs", "block_references"),
        count_if(is_garbage(), "garbage_blocks"), long_sum(F.when(is_garbage(), F.col("size")), "garbage_bytes"),
        count_if(is_missing(), "missing_blocks")).first().asDict()
    non_heads = stale_block_lists(spark, datetime.now(timezone.utc)).count()
    # The same figures, and the same ratio, as the driver-side ``casstor stats``.
    core = StoreStats(f.n, f.size, b.pop("unique_blocks"), b.pop("unique_bytes") + f.inline_bytes,
                      b.pop("stored_bytes") + f.inline_stored)
    return {**core.as_dict(), **b, "non_head_block_lists": non_heads}


def _block_sizes(facts: DataFrame, bin_bytes: int) -> pd.DataFrame:
    rows = (facts.where(F.col("indexed")).groupBy(F.floor(F.col("size") / bin_bytes).alias("bin"))
            .agg(F.count(F.lit(1)).alias("blocks"), long_sum("size", "size")).collect())
    found = {r.bin: (r.blocks, r.size) for r in rows}
    last = max([HISTOGRAM_BINS - 1, *found])
    return pd.DataFrame([{"from_bytes": b * bin_bytes, "to_bytes": (b + 1) * bin_bytes,
                          "blocks": found.get(b, (0, 0))[0], "bytes": found.get(b, (0, 0))[1]}
                         for b in range(last + 1)], columns=COLUMNS["block_sizes"])


def _most_shared(facts: DataFrame, top: int) -> pd.DataFrame:
    rows = facts.where(F.col("refs").isNotNull()).orderBy(F.desc("refs"), "hash").limit(top).collect()
    return pd.DataFrame([{"hash": bytes(r.hash).hex(), "size": r.ref_size, "refs": r.refs} for r in rows],
                        columns=COLUMNS["most_shared_blocks"])


def _largest_files(files: DataFrame, largest: int) -> pd.DataFrame:
    rows = files.orderBy(F.desc("size"), "id").limit(largest).collect()
    table = pd.DataFrame([r.asDict() for r in rows], columns=["id", "size", "blocks", "committed_ms"])
    committed = pd.to_datetime(table.pop("committed_ms").astype("int64"), unit="ms", utc=True)
    return table.assign(committed_at=committed)[COLUMNS["largest_files"]]


def compute(spark: SparkSession, top: int = 20, depth: int = 1, largest: int = 20,
            settings: StoreSettings | None = None, rules: ForgetRules | None = None) -> DedupReport:
    """Run the report's aggregations (module docstring); collects only small tables.

    ``depth``: path components of a file ID that make its prefix in the
    ``prefixes`` table; ``top`` / ``largest``: rows of ``most_shared_blocks``
    and ``largest_files``; ``rules``: what the ``forgetting`` table assumes forget decides by (default: the
    store's policies, snapshots and grace, now).
    """
    if top < 1 or largest < 1:
        raise CasstorError(f"--top {top} / --largest {largest}: must be at least 1")
    if depth < 1:
        raise CasstorError(f"--depth {depth}: must be at least 1")
    settings = settings or store_settings()
    rules = rules or _read(read_rules)
    # Each is read by several aggregations: scan the tables once.
    files = (heads(spark, "size", "blocks", "stored_size", "committed_at")
             .select("id", "size", "blocks", "stored_size", F.unix_millis("committed_at").alias("committed_ms"))
             .persist())
    references = head_references(spark, depth).persist()
    facts = block_facts(spark, references).persist()
    # Blocks and inline files' content: for the figures of stored bytes by owner (module docstring).
    contents = facts.unionByName(inline_facts(files, depth))
    try:
        totals = _totals(spark, files, facts)
        tables = {"prefixes": prefix_table(files, references, contents, depth), "sharing": sharing_table(facts),
                  **growth_tables(files, contents),
                  "block_sizes": _block_sizes(facts, max(1, settings.chunk_max // HISTOGRAM_BINS)),
                  "most_shared_blocks": _most_shared(facts, top), "largest_files": _largest_files(files, largest),
                  "forgetting": forgetting_table(spark, rules)}
    finally:
        for df in (files, references, facts):
            df.unpersist()
    return DedupReport(totals, {name: tables[name] for name in COLUMNS}, depth)
