"""The dedup report: what the store holds, what its files point at, and what dedup saved.

:func:`compute` runs the figures as Spark aggregations over the light
tables (``files``, ``file_blocks``, ``existing_blocks``; never the blob
table) and collects only small results; :func:`render` writes them as JSON,
CSV and PNG plots; :func:`format_table` is the readable summary a job
prints. Every byte total is summed as a 64-bit integer: ``existing_blocks``
and ``file_blocks`` keep sizes in ``int`` columns, and a sum in that type
overflows past 2 GiB (the first prototype printed a negative total).

Figures (``DedupReport.totals``):

* ``files``: committed files (heads); ``logical_bytes``: the sum of their sizes;
* ``unique_blocks`` / ``unique_bytes``: the index rows, i.e. what is stored once (after dedup);
* ``stored_bytes``: those blocks as kept (after compression; a block indexed
  without its stored size counts as raw);
* ``dedup_ratio`` = logical / unique bytes, ``compression_ratio`` = unique /
  stored bytes (1.0 for an empty store, as ``casstor stats``);
* ``referenced_blocks`` / ``block_references``: distinct blocks the heads name,
  and how many times they name them;
* ``garbage_blocks`` / ``garbage_bytes``: stored blocks no head names (reclaim frees them);
* ``missing_blocks``: blocks a head names that are not stored (``jobs/verify.py`` explains them);
* ``non_head_block_lists``: block lists that are not a head: superseded versions
  and stores in progress or abandoned.

Tables: ``block_sizes`` (histogram of stored block sizes), ``most_shared_blocks``
(top blocks by reference count), ``prefixes`` (per first path component(s)
of the file ID), ``largest_files``.

Example::

    >>> report = compute(spark, top=10, prefix_depth=1)   # doctest: +SKIP
    >>> report.totals["dedup_ratio"]                      # doctest: +SKIP
    3.41
    >>> render(report, Path("plots"))                     # doctest: +SKIP
    [PosixPath('plots/dedup_stats.json'), ...]

Failures: an uninitialised store or bad arguments raise
:class:`~casstor_ops.errors.CasstorError`; Cassandra failures surface from
the Spark action as the connector's error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from casstor_ops.cluster.connection import connect, endpoint_from_env
from casstor_ops.errors import CasstorError
from casstor_ops.ops.units import byte_unit, human_bytes
from casstor_ops.spark.references import garbage_blocks, head_block_lists, missing_blocks, referenced_blocks, stale_block_lists, \
    stored_blocks
from casstor_ops.store.records import StoreStats
from casstor_ops.store.keyspaces import META_KS
from casstor_ops.store.schema import StoreSettings, require_settings
from casstor_ops.spark.session import read_table

HISTOGRAM_BINS = 16
ROOT_PREFIX = "(top level)"
PLOTTED_PREFIXES = 15

TABLES = ("block_sizes", "most_shared_blocks", "prefixes", "largest_files")


@dataclass
class DedupReport:
    """Totals and small tables (pandas), ready to print, plot or save."""

    totals: dict[str, int | float | None]
    block_sizes: pd.DataFrame     # from_bytes, to_bytes, blocks, bytes
    most_shared_blocks: pd.DataFrame  # hash (hex), size, refs
    prefixes: pd.DataFrame        # prefix, files, logical_bytes, unique_blocks, unique_bytes, dedup_ratio
    largest_files: pd.DataFrame   # id, size, blocks, committed_at


def store_settings() -> StoreSettings:
    """The recorded settings of the store the environment names; CasstorError if it is not initialised."""
    session = connect(endpoint_from_env(), start=False)
    try:
        return require_settings(session)
    finally:
        session.cluster.shutdown()


def _long_sum(column: str) -> F.Column:
    # Cast before summing: the int columns would overflow past 2^31 in Cassandra or a narrow sum.
    return F.coalesce(F.sum(F.col(column).cast("long")), F.lit(0)).alias(column)


def prefix_of(depth: int, column: str = "id") -> F.Column:
    """The first ``depth`` path components of a file ID that are directories ('a/b/c.txt', 1 -> 'a')."""
    parts = F.split(F.col(column), "/")
    dirs = F.least(F.lit(depth), F.size(parts) - 1)
    prefix = F.concat_ws("/", F.slice(parts, 1, F.greatest(dirs, F.lit(0))))
    return F.when(prefix == "", F.lit(ROOT_PREFIX)).otherwise(prefix)


def _totals(spark: SparkSession, files: DataFrame, stored: DataFrame, referenced: DataFrame) -> dict:
    f = files.agg(F.count(F.lit(1)).alias("n"), _long_sum("size")).first()
    s = stored.agg(F.count(F.lit(1)).alias("n"), _long_sum("size"),
                   F.sum(F.coalesce("stored_size", "size").cast("long")).alias("stored")).first()
    r = referenced.agg(F.count(F.lit(1)).alias("n"), _long_sum("refs")).first()
    g = garbage_blocks(stored, referenced).agg(F.count(F.lit(1)).alias("n"), _long_sum("size")).first()
    missing = missing_blocks(stored, referenced).count()
    non_heads = stale_block_lists(spark, datetime.now(timezone.utc)).count()
    # The same figures, and the same ratio, as the driver-side ``casstor stats``.
    return {
        **StoreStats(f.n, f.size, s.n, s.size, s.stored or 0).as_dict(), "referenced_blocks": r.n, "block_references": r.refs,
        "garbage_blocks": g.n, "garbage_bytes": g.size, "missing_blocks": missing,
        "non_head_block_lists": non_heads,
    }


def _block_sizes(stored: DataFrame, bin_bytes: int) -> pd.DataFrame:
    rows = (stored.groupBy(F.floor(F.col("size") / bin_bytes).alias("bin"))
            .agg(F.count(F.lit(1)).alias("blocks"), _long_sum("size")).collect())
    found = {r.bin: (r.blocks, r.size) for r in rows}
    last = max([HISTOGRAM_BINS - 1, *found])
    return pd.DataFrame([{"from_bytes": b * bin_bytes, "to_bytes": (b + 1) * bin_bytes,
                          "blocks": found.get(b, (0, 0))[0], "bytes": found.get(b, (0, 0))[1]}
                         for b in range(last + 1)])


def _prefixes(spark: SparkSession, files: DataFrame, depth: int) -> pd.DataFrame:
    per_files = (files.groupBy(prefix_of(depth).alias("prefix"))
                 .agg(F.count(F.lit(1)).alias("files"), _long_sum("size")))
    per_blocks = (head_block_lists(spark).select(prefix_of(depth).alias("prefix"), "hash", "size").distinct()
                  .groupBy("prefix").agg(F.count(F.lit(1)).alias("unique_blocks"), _long_sum("size")))
    rows = per_files.join(per_blocks.withColumnRenamed("size", "unique_bytes"), "prefix", "left").collect()
    table = pd.DataFrame([{"prefix": r.prefix, "files": r.files, "logical_bytes": r.size,
                           "unique_blocks": r.unique_blocks or 0, "unique_bytes": r.unique_bytes or 0,
                           "dedup_ratio": round(r.size / r.unique_bytes, 3) if r.unique_bytes else 1.0}
                          for r in rows],
                         columns=["prefix", "files", "logical_bytes", "unique_blocks", "unique_bytes",
                                  "dedup_ratio"])
    return table.sort_values(["logical_bytes", "prefix"], ascending=[False, True], ignore_index=True)


def compute(spark: SparkSession, top: int = 20, prefix_depth: int = 1, largest: int = 20,
            settings: StoreSettings | None = None) -> DedupReport:
    """Run the report's aggregations (see the module docstring); collects only small tables."""
    if top < 1 or largest < 1:
        raise CasstorError(f"--top {top} / --largest {largest}: must be at least 1")
    if prefix_depth < 1:
        raise CasstorError(f"--prefix-depth {prefix_depth}: must be at least 1")
    settings = settings or store_settings()
    # Each is read by several aggregations: scan the tables once.
    files = read_table(spark, META_KS, "files").select("id", "size", "blocks", "committed_at").persist()
    stored = stored_blocks(spark, "stored_size").persist()
    referenced = referenced_blocks(spark).persist()
    try:
        totals = _totals(spark, files, stored, referenced)
        block_sizes = _block_sizes(stored, max(1, settings.chunk_max // HISTOGRAM_BINS))
        most_shared_blocks = pd.DataFrame(
            [{"hash": bytes(r.hash).hex(), "size": r.size, "refs": r.refs}
             for r in referenced.orderBy(F.desc("refs"), "hash").limit(top).collect()],
            columns=["hash", "size", "refs"])
        largest_files = pd.DataFrame(
            [r.asDict() for r in files.orderBy(F.desc("size"), "id").limit(largest).collect()],
            columns=["id", "size", "blocks", "committed_at"])
        prefixes = _prefixes(spark, files, prefix_depth)
    finally:
        for df in (files, stored, referenced):
            df.unpersist()
    return DedupReport(totals, block_sizes, most_shared_blocks, prefixes, largest_files)


# -- rendering ---------------------------------------------------------------------------------

def _figure(title: str, xlabel: str, ylabel: str, height: float = 4.5) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(9, height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


def _no_data(ax) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")


def _plot_block_sizes(report: DedupReport) -> Figure:
    table = report.block_sizes
    fig, ax = _figure("Stored blocks by size", "block size (KiB)", "blocks")
    width = (table.to_bytes - table.from_bytes) / 1024
    ax.bar(table.from_bytes / 1024, table.blocks, width=width, align="edge", edgecolor="black")
    if table.blocks.sum() == 0:
        _no_data(ax)
    return fig


def _plot_prefixes(report: DedupReport) -> Figure:
    table = report.prefixes.head(PLOTTED_PREFIXES)
    unit, size = byte_unit(max([1, *table.logical_bytes]))
    fig, ax = _figure(f"Logical vs unique bytes per prefix (top {PLOTTED_PREFIXES} by logical bytes)",
                      "file ID prefix", f"bytes ({unit})")
    x = range(len(table))
    ax.bar([i - 0.2 for i in x], table.logical_bytes / size, width=0.4, label="logical (as stored by users)")
    ax.bar([i + 0.2 for i in x], table.unique_bytes / size, width=0.4, label="unique blocks of the prefix")
    ax.set_xticks(list(x), table.prefix, rotation=30, ha="right")
    ax.legend()
    if table.empty:
        _no_data(ax)
    return fig


def _plot_most_shared(report: DedupReport) -> Figure:
    table = report.most_shared_blocks
    fig, ax = _figure(f"Most shared blocks (top {len(table)})", "references from committed files (count)",
                      "block (hash prefix, size)", height=max(3.0, 0.3 * len(table) + 1.5))
    labels = [f"{h[:12]}… {human_bytes(s)}" for h, s in zip(table.hash, table["size"])]
    ax.barh(labels[::-1], table.refs[::-1])
    if table.empty:
        _no_data(ax)
    return fig


def _plot_largest_files(report: DedupReport) -> Figure:
    table = report.largest_files
    unit, size = byte_unit(max([1, *table["size"]]))
    fig, ax = _figure(f"Largest files (top {len(table)})", f"size ({unit})", "file ID",
                      height=max(3.0, 0.3 * len(table) + 1.5))
    ax.barh(list(table.id[::-1]), table["size"][::-1] / size)
    if table.empty:
        _no_data(ax)
    return fig


PLOTS = {"block_sizes": _plot_block_sizes, "prefixes": _plot_prefixes,
         "most_shared_blocks": _plot_most_shared, "largest_files": _plot_largest_files}


def _records(table: pd.DataFrame) -> list[dict]:
    return json.loads(table.to_json(orient="records", date_format="iso"))


def render(report: DedupReport, out_dir: Path) -> list[Path]:
    """Write ``dedup_stats.json``, one CSV per table (``dedup_totals.csv`` too) and one PNG per plot."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "dedup_stats.json"]
    written[0].write_text(json.dumps({"totals": report.totals,
                                      **{name: _records(getattr(report, name)) for name in TABLES}}, indent=2))
    totals = pd.DataFrame(list(report.totals.items()), columns=["figure", "value"])
    for name, table in [("dedup_totals", totals), *((name, getattr(report, name)) for name in TABLES)]:
        path = out_dir / f"{name}.csv"
        table.to_csv(path, index=False)
        written.append(path)
    for name, plot in PLOTS.items():
        path = out_dir / f"{name}.png"
        plot(report).savefig(path, dpi=100)
        written.append(path)
    return written


_LABELS = {
    "files": "files (committed)", "logical_bytes": "logical bytes", "unique_blocks": "unique blocks (stored)",
    "unique_bytes": "unique bytes (after dedup)", "stored_bytes": "stored bytes (after compression)",
    "dedup_ratio": "dedup ratio (logical/unique)", "compression_ratio": "compression ratio (unique/stored)",
    "referenced_blocks": "referenced blocks", "block_references": "block references",
    "garbage_blocks": "garbage blocks (unreferenced)", "garbage_bytes": "garbage bytes",
    "missing_blocks": "missing blocks (referenced, not stored)",
    "non_head_block_lists": "non-head block lists (superseded/in progress)",
}


def format_table(report: DedupReport, rows: int = 10) -> str:
    """The report as aligned text: totals, then the head of each table."""
    lines = ["casstor dedup report", ""]
    for key, label in _LABELS.items():
        value = report.totals[key]
        shown = human_bytes(value) + f"  ({value} B)" if key.endswith("_bytes") else \
            ("-" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:.3f}")
        lines.append(f"  {label:<46} {shown}")
    with pd.option_context("display.width", 160, "display.max_colwidth", 48):
        for title, table in [("per prefix", report.prefixes), ("most shared blocks", report.most_shared_blocks),
                             ("largest files", report.largest_files)]:
            lines += ["", f"{title} (first {min(rows, len(table))} of {len(table)}):",
                      table.head(rows).to_string(index=False) if not table.empty else "  (none)"]
    return "\n".join(lines)

