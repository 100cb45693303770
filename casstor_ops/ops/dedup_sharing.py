"""Who shares which bytes: what deleting a prefix would free, and how references are distributed.

Two tables of the dedup report, aggregated in Spark from the per-block
facts (:mod:`casstor_ops.ops.dedup_blocks`); only one row per prefix or per
class reaches the driver.

``prefixes``: the heads grouped by :func:`~casstor_ops.ops.dedup_blocks.prefix_of`
at depth N (each file in exactly one group: at depth 2, ``a`` holds the files
directly in ``a/``, ``a/b`` those below ``a/b/``), with

* ``files``, ``logical_bytes``: the group's heads and the sum of their sizes;
* ``unique_blocks``, ``unique_bytes``: the distinct blocks its heads name
  (and, bytes only, its inline files' content);
* ``exclusive_blocks``, ``exclusive_bytes``, ``exclusive_stored_bytes``: those
  named by no head outside the group: what removing the group's files and a
  reclaim would free (``exclusive_stored_bytes``: as stored, after
  compression; a block that is missing frees nothing stored). An inline
  file's content is exclusive to its group: its bytes count here, as no block
  (removing the file frees it, no reclaim needed);
* ``shared_bytes`` = ``unique_bytes - exclusive_bytes``: blocks the group
  names that heads elsewhere name too (they stay after the removal).

Superseded versions, removed files and stores in progress name nothing
here: only heads count, as for reclaim. Sorted by what removal would free.

``sharing``: referenced blocks (blocks only: no inline file) by their number
of references (a block named twice by one file counts twice), in classes 1, 2,
3-4, 5-8, ... (``min_refs``-``max_refs``, powers of two), with their ``bytes``
(once each), ``stored_bytes``, ``references`` and ``saved_bytes`` = the sum of
``(refs - 1) x size``: what dedup saved in that class. The classes'
``saved_bytes`` add up to the referenced blocks' logical minus unique bytes.

Example::

    >>> prefix_table(files, references, contents, depth=1).head(3)   # doctest: +SKIP
    >>> class_label(3)
    '5-8'

Lazy Spark plans until the ``collect``; Cassandra errors surface there.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from casstor_ops.ops.dedup_blocks import long_sum, prefix_of
from casstor_ops.ops.dedup_report import COLUMNS


def prefix_table(files: DataFrame, references: DataFrame, contents: DataFrame, depth: int) -> pd.DataFrame:
    """The ``prefixes`` table (module docstring) of the heads ``files`` at ``depth``; ``contents`` are the block
    facts with the inline files' rows (:func:`~casstor_ops.ops.dedup_blocks.inline_facts`)."""
    per_files = files.groupBy(prefix_of(depth).alias("prefix")).agg(
        F.count(F.lit(1)).alias("files"), long_sum("size", "logical_bytes"))
    per_blocks = (references.select("prefix", "hash", "size").distinct().groupBy("prefix")
                  .agg(F.count(F.lit(1)).alias("unique_blocks"), long_sum("size", "unique_bytes")))
    exclusive = (contents.where(F.col("refs").isNotNull() & (F.col("lo") == F.col("hi")))
                 .groupBy(F.col("lo").alias("prefix"))
                 .agg(long_sum("blocks", "exclusive_blocks"), long_sum("ref_size", "exclusive_bytes"),
                      long_sum("stored_bytes", "exclusive_stored_bytes"),
                      long_sum(F.when(F.col("blocks") == 0, F.col("ref_size")), "inline_bytes")))
    rows = per_files.join(per_blocks, "prefix", "left").join(exclusive, "prefix", "left").collect()
    table = pd.DataFrame([_prefix_row(r.asDict()) for r in rows], columns=COLUMNS["prefixes"])
    return table.sort_values(["exclusive_stored_bytes", "logical_bytes", "prefix"],
                             ascending=[False, False, True], ignore_index=True)


def _prefix_row(row: dict) -> dict:
    # A prefix whose heads name no block (empty files) has no row in the block aggregates.
    row = {k: (0 if v is None else v) for k, v in row.items()}
    row["unique_bytes"] += row.pop("inline_bytes")  # exclusive, so never shared_bytes
    return {**row, "shared_bytes": row["unique_bytes"] - row["exclusive_bytes"],
            "dedup_ratio": round(row["logical_bytes"] / row["unique_bytes"], 3) if row["unique_bytes"] else 1.0}


def refs_class(refs: Column) -> Column:
    """The class of a reference count: 0 for 1, 1 for 2, k for 2^(k-1)+1 .. 2^k (exact, integer arithmetic)."""
    # The bit length of refs - 1, as the length of its binary digits: no floating-point log2.
    return F.when(refs <= 1, F.lit(0)).otherwise(F.length(F.bin(refs - 1)))


def class_bounds(k: int) -> tuple[int, int]:
    """The reference counts of class ``k``: ``(1, 1)``, ``(2, 2)``, ``(3, 4)``, ``(5, 8)``, ..."""
    return (1, 1) if k == 0 else ((1 << (k - 1)) + 1, 1 << k)


def class_label(k: int) -> str:
    """``"1"``, ``"2"``, ``"3-4"``, ``"5-8"``, ... for class ``k``."""
    low, high = class_bounds(k)
    return str(low) if low == high else f"{low}-{high}"


def sharing_table(facts: DataFrame) -> pd.DataFrame:
    """The ``sharing`` table (module docstring): every class from 1 to the largest present, empty ones as 0."""
    refs = F.col("refs")
    rows = (facts.where(refs.isNotNull()).groupBy(refs_class(refs).alias("k"))
            .agg(F.count(F.lit(1)).alias("blocks"), long_sum("ref_size", "bytes"),
                 long_sum("stored_bytes", "stored_bytes"), long_sum(refs, "references"),
                 long_sum((refs - 1).cast("long") * F.col("ref_size").cast("long"), "saved_bytes"))
            .collect())
    found = {r.k: r.asDict() for r in rows}
    empty = {"blocks": 0, "bytes": 0, "stored_bytes": 0, "references": 0, "saved_bytes": 0}
    return pd.DataFrame([{"refs_class": class_label(k), "min_refs": class_bounds(k)[0], "max_refs": class_bounds(k)[1],
                          **{c: found.get(k, empty)[c] for c in empty}}
                         for k in range(max(found, default=-1) + 1)], columns=COLUMNS["sharing"])

