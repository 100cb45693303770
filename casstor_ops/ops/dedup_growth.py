"""How the store grew: the live data by commit time, and the new bytes each top-level prefix brought.

**What "over time" means here.** A store keeps one head per file (its last
committed version); overwritten versions and removed files leave only
garbage until reclaim, and no record of when they came and went. So the
timeline is that of *the data the store holds now*: each head is placed at
its ``committed_at`` (the commit of its current version, not of the file's
first store), and each block it names at the earliest head that names it
(ties: the smaller file ID). At a time T the cumulative figures are

* ``files``, ``logical_bytes``: the heads committed at or before T, their sizes;
* ``unique_blocks``, ``unique_bytes``, ``stored_bytes``: the distinct blocks
  those heads name (raw, and as stored after compression).

An inline file's content (:mod:`casstor_ops.store.engine.inline`) counts as data
its own head brought: in ``unique_bytes`` and ``stored_bytes`` at its
commit, in its prefix's ``new_bytes`` and ``new_stored_bytes``; it is no
block, so never in ``unique_blocks`` or ``new_blocks``.

The last row equals the report's heads and referenced blocks, plus the
inline files' content (garbage is not in it; a missing block counts in
``unique_bytes`` with 0 stored bytes).
A file overwritten yesterday with mostly old blocks moves to yesterday with
its logical bytes, while its old blocks stay where their earliest head is:
the curves show when today's data was first committed, not the store's size
on a past day (which would need the history reclaim deletes).

Time is cut into at most :data:`MAX_BINS` bins of a round width
(:func:`bin_width_ms`: 1 ms to 1 year, aligned to the Unix epoch, UTC);
only bins with a commit have a row.

``new_bytes_by_prefix``: per top-level prefix (``prefix_of(1)``) its heads
(``files``, ``logical_bytes``, first and last ``committed_at``) and the blocks
attributed to it as above (``new_blocks``, ``new_bytes``,
``new_stored_bytes``): what it added that no earlier head had.
``new_bytes_over_time``: the same ``new_bytes``, cumulative per bin, for the
:data:`SERIES_PREFIXES` prefixes that brought most and ``(other)``.

Example::

    >>> bin_width_ms(0, 3_600_000)          # an hour of commits: 1-minute bins
    60000
    >>> growth_tables(files, contents)       # doctest: +SKIP

Lazy Spark plans until each ``collect``; Cassandra errors surface there.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from casstor_ops.ops.dedup_blocks import long_sum, prefix_of
from casstor_ops.ops.dedup_report import COLUMNS

MAX_BINS = 100
SERIES_PREFIXES = 7
OTHER = "(other)"

_S, _M, _H, _D = 1000, 60_000, 3_600_000, 86_400_000
_WIDTHS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, _S, 2 * _S, 5 * _S, 10 * _S, 15 * _S, 30 * _S, _M, 2 * _M, 5 * _M,
              10 * _M, 15 * _M, 30 * _M, _H, 2 * _H, 3 * _H, 6 * _H, 12 * _H, _D, 2 * _D, 7 * _D, 14 * _D, 30 * _D,
              91 * _D, 365 * _D]


def bin_width_ms(first_ms: int, last_ms: int) -> int:
    """The smallest round width that cuts ``first_ms``..``last_ms`` into at most :data:`MAX_BINS` epoch-aligned bins."""
    for width in _WIDTHS_MS:
        if last_ms // width - first_ms // width < MAX_BINS:
            return width
    years = -(-(last_ms - first_ms) // (365 * _D * (MAX_BINS - 1)))
    return 365 * _D * years


def _bin(column: str, width: int) -> Column:
    return F.floor(F.col(column) / F.lit(width)).cast("long").alias("bin")


def _utc(ms: pd.Series) -> pd.Series:
    return pd.to_datetime(ms.astype("int64"), unit="ms", utc=True)


def growth_tables(files: DataFrame, contents: DataFrame) -> dict[str, pd.DataFrame]:
    """``growth``, ``new_bytes_by_prefix`` and ``new_bytes_over_time`` (module docstring).

    ``files`` are the heads with ``committed_ms`` (Unix ms), ``contents`` the
    per-block facts with the inline files' rows (``blocks`` 0:
    :func:`~casstor_ops.ops.dedup_blocks.inline_facts`); empty tables for a
    store without heads.
    """
    span = files.agg(F.min("committed_ms").alias("first"), F.max("committed_ms").alias("last")).first()
    if span.first is None:
        return {name: pd.DataFrame(columns=COLUMNS[name])
                for name in ("growth", "new_bytes_by_prefix", "new_bytes_over_time")}
    width = bin_width_ms(span.first, span.last)
    referenced = contents.where(F.col("refs").isNotNull())
    growth = _growth(files, referenced, width)
    by_prefix = _new_bytes_by_prefix(files, referenced)
    return {"growth": growth[COLUMNS["growth"]], "new_bytes_by_prefix": by_prefix,
            "new_bytes_over_time": _new_bytes_over_time(referenced, by_prefix, growth, width)}


def _frame(rows: list, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame([r.asDict() for r in rows], columns=columns)


def _growth(files: DataFrame, referenced: DataFrame, width: int) -> pd.DataFrame:
    """The ``growth`` columns and ``bin``, the bin's index."""
    heads = _frame(files.groupBy(_bin("committed_ms", width))
                   .agg(F.count(F.lit(1)).alias("files"), long_sum("size", "logical_bytes")).collect(),
                   ["bin", "files", "logical_bytes"]).sort_values("bin").set_index("bin")
    blocks = _frame(referenced.groupBy(_bin("first_ms", width))
                    .agg(long_sum("blocks", "unique_blocks"), long_sum("ref_size", "unique_bytes"),
                         long_sum("stored_bytes", "stored_bytes")).collect(),
                    ["bin", "unique_blocks", "unique_bytes", "stored_bytes"]).set_index("bin")
    # A block's first head is a head, so every bin of ``blocks`` has heads; reindex keeps int64 (exact).
    sums = heads.join(blocks.reindex(heads.index, fill_value=0)).cumsum().reset_index()
    return sums.assign(bin_start=_utc(sums.bin * width), bin_end=_utc((sums.bin + 1) * width))


def _new_bytes_by_prefix(files: DataFrame, referenced: DataFrame) -> pd.DataFrame:
    per_files = files.groupBy(prefix_of(1).alias("prefix")).agg(
        F.count(F.lit(1)).alias("files"), long_sum("size", "logical_bytes"),
        F.min("committed_ms").alias("first_commit"), F.max("committed_ms").alias("last_commit"))
    counts = ["new_blocks", "new_bytes", "new_stored_bytes"]
    per_blocks = referenced.groupBy(prefix_of(1, "first_id").alias("prefix")).agg(
        long_sum("blocks", counts[0]), long_sum("ref_size", counts[1]), long_sum("stored_bytes", counts[2]))
    # A prefix whose heads brought no block first has none: 0, in Spark, so pandas keeps int64.
    joined = per_files.join(per_blocks, "prefix", "left").fillna(0, subset=counts)
    table = _frame(joined.collect(), COLUMNS["new_bytes_by_prefix"])
    table["first_commit"], table["last_commit"] = _utc(table.first_commit), _utc(table.last_commit)
    return table.sort_values(["new_bytes", "prefix"], ascending=[False, True], ignore_index=True)


def _new_bytes_over_time(referenced: DataFrame, by_prefix: pd.DataFrame, growth: pd.DataFrame,
                         width: int) -> pd.DataFrame:
    top = list(by_prefix.prefix[by_prefix.new_bytes > 0][:SERIES_PREFIXES])
    prefix = prefix_of(1, "first_id")
    series = F.when(prefix.isin(top), prefix).otherwise(F.lit(OTHER)).alias("prefix")
    found = {(r.bin, r.prefix): r.new_bytes for r in referenced.groupBy(_bin("first_ms", width), series)
             .agg(long_sum("ref_size", "new_bytes")).collect()}
    shown = top + ([OTHER] if any(name == OTHER for _, name in found) else [])
    rows = []
    for name in shown:
        total = 0
        for index, end in zip(growth.bin, growth.bin_end):
            total += found.get((index, name), 0)
            rows.append({"bin_end": end, "prefix": name, "new_bytes": total})
    return pd.DataFrame(rows, columns=COLUMNS["new_bytes_over_time"])
