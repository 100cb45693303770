"""The dedup report's figures, one per question, readable at a glance.

Each function draws one :class:`~matplotlib.figure.Figure` from a
:class:`~casstor_ops.ops.dedup_report.DedupReport` (no Spark, no pyplot
state): titles say the question, axes their unit, byte axes read
``64 MiB``, counts ``25k``, a log scale where values span decades
(:mod:`casstor_ops.ops.readable_axes`), long prefixes and file IDs are cut
in the middle with an ellipsis, and the layout is constrained so no label
is clipped. :data:`FIGURES` names them as they are written (``<name>.png``).

* ``prefixes``: what removing a prefix frees (exclusive bytes, raw and as
  stored), beside the bytes it shares and its logical bytes;
* ``sharing``: blocks and bytes by reference-count class (log scale), and
  what each class saved;
* ``growth``: logical, unique and stored bytes of the live data by commit time;
* ``new_bytes_by_prefix``: the same unique bytes, stacked by the top-level
  prefix that brought them first;
* ``block_sizes``: the stored blocks' size histogram;
* ``largest_files``.

Example::

    >>> FIGURES["sharing"](report).savefig("sharing.png")   # doctest: +SKIP

An empty table draws its axes with "no data"; nothing raises for a valid report.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

from casstor_ops.ops.dedup_report import DedupReport
from casstor_ops.ops.readable_axes import byte_axis, count_axis, shorten, spans_decades
from casstor_ops.ops.units import human_bytes

PLOTTED_ROWS = 15    # prefixes and files per bar chart
LABEL_WIDTH = 36     # characters of a prefix or file ID on an axis
WIDTH_IN = 10


def _figure(title: str, height: float, panels: int = 1, **subplots) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(WIDTH_IN, height), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False, **subplots)[0]
    fig.suptitle(title, fontweight="bold")
    return fig, list(axes)


def _no_data(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")


def _bar_height(rows: int) -> float:
    return max(3.5, 0.38 * rows + 2.2)


def _row_labels(ax: Axes, labels: pd.Series) -> None:
    # Positions, not categories: two long labels shortened alike must stay two bars.
    ax.set_yticks(range(len(labels)), [shorten(str(label), LABEL_WIDTH) for label in labels])
    ax.invert_yaxis()


def plot_prefixes(report: DedupReport) -> Figure:
    table = report.tables["prefixes"].head(PLOTTED_ROWS)
    fig, (free, logical) = _figure(
        f"What would removing a prefix free? (depth {report.depth}, top {len(table)} by stored bytes freed)",
        _bar_height(len(table)) + 0.8, 2, sharey=True, width_ratios=[3, 2])
    y = np.arange(len(table))
    free.barh(y, table.exclusive_bytes, color="tab:red", label="exclusive: freed by removing it and a reclaim")
    free.barh(y, table.shared_bytes, left=table.exclusive_bytes, color="tab:blue", alpha=0.55,
              label="shared: also named by other prefixes (kept)")
    free.barh(y, table.exclusive_stored_bytes, height=0.3, color="black",
              label="exclusive as stored (after compression)")
    for row, (end, freed) in enumerate(zip(table.unique_bytes, table.exclusive_stored_bytes)):
        free.annotate(f"frees {human_bytes(int(freed))}", (end, row), xytext=(4, 0), textcoords="offset points",
                      va="center", fontsize="small")
    free.set_xlim(0, max([1, *table.unique_bytes]) * 1.3)  # room for the annotations
    free.set_title("Unique bytes the prefix names")
    free.set_xlabel("bytes (each block once)")
    logical.barh(y, table.logical_bytes, color="tab:grey")
    logical.set_title("Logical bytes (sizes of its files)")
    logical.set_xlabel("bytes")
    for ax in (free, logical):
        byte_axis(ax, "x")
    _row_labels(free, table.prefix)
    free.set_ylabel("prefix")
    fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    if table.empty:
        _no_data(free)
    return fig


def plot_sharing(report: DedupReport) -> Figure:
    table = report.tables["sharing"]
    fig, (blocks, volume) = _figure("How is sharing distributed? Referenced blocks by number of references",
                                    4.8, 2)
    x = np.arange(len(table))
    blocks.bar(x, table.blocks, color="tab:blue")
    blocks.set_title("Blocks (log scale)")
    blocks.set_ylabel("blocks")
    count_axis(blocks, "y", log=True)
    volume.bar(x - 0.2, table["bytes"], width=0.4, color="tab:blue", label="unique bytes (stored once)")
    volume.bar(x + 0.2, table.saved_bytes, width=0.4, color="tab:green", label="saved by dedup: (refs − 1) × size")
    volume.set_title("Bytes (log scale)")
    volume.set_ylabel("bytes")
    byte_axis(volume, "y", log=True)
    volume.legend(fontsize="small")
    # Log bars grow from the axis bottom: put it below the smallest bar, so a class of 1 block still shows.
    blocks.set_ylim(bottom=0.5)
    smallest = min([v for v in [*table["bytes"], *table.saved_bytes] if v > 0], default=1)
    volume.set_ylim(bottom=smallest / 2)
    for ax in (blocks, volume):
        ax.set_xticks(x, table.refs_class)
        ax.set_xlabel("references from committed files")
        if table.empty or not table.blocks.sum():
            _no_data(ax)
    return fig


def _times(column: pd.Series) -> pd.Series:
    return pd.to_datetime(column, utc=True).dt.tz_localize(None)


def _time_axis(ax: Axes) -> None:
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    ax.set_xlabel("commit time (UTC)")


GROWTH_NOTE = ("The data held now: each file at the commit of its current version, each block at the first\n"
               "file that names it; overwritten versions and removed files are not counted.")


def plot_growth(report: DedupReport) -> Figure:
    table = report.tables["growth"]
    fig, (ax,) = _figure("How did the store grow? The live data by commit time (cumulative)", 5)
    ax.set_title(GROWTH_NOTE, fontsize="small", color="dimgrey")
    few = len(table) <= 30
    # Equal curves (no dedup yet, nothing compressible) overlap: thinner lines on top keep each visible.
    for (column, label), width in zip([("logical_bytes", "logical (sizes of the files)"),
                                       ("unique_bytes", "unique (after dedup)"),
                                       ("stored_bytes", "stored (after compression)")], (4, 2.5, 1.2)):
        ax.step(_times(table.bin_end), table[column], where="post", linewidth=width, label=label,
                marker="o" if few else None, markersize=width + 2)
    ax.set_ylabel("bytes")
    byte_axis(ax, "y")
    ax.set_ylim(bottom=0)
    _time_axis(ax)
    ax.legend(loc="upper left", fontsize="small")
    if table.empty:
        _no_data(ax)
    return fig


def plot_new_bytes(report: DedupReport) -> Figure:
    table = report.tables["new_bytes_over_time"]
    fig, (ax,) = _figure("Which top-level prefix brought the new bytes, and when (cumulative, stacked)", 4.8)
    series = table.pivot(index="bin_end", columns="prefix", values="new_bytes")
    if not table.empty:
        order = list(dict.fromkeys(table.prefix))  # largest first, "(other)" last
        labels = [f"{shorten(p, LABEL_WIDTH)} ({human_bytes(int(series[p].iloc[-1]))})" for p in order]
        ax.stackplot(_times(pd.Series(series.index)), *[series[p].to_numpy() for p in order], labels=labels,
                     step="post", alpha=0.8)
        ax.legend(loc="upper left", fontsize="small", title="prefix (new bytes)")
    else:
        _no_data(ax)
    ax.set_ylabel("unique bytes, by the prefix of their first file")
    byte_axis(ax, "y")
    _time_axis(ax)
    return fig


def plot_block_sizes(report: DedupReport) -> Figure:
    table = report.tables["block_sizes"]
    fig, (ax,) = _figure("Stored blocks by size", 4.5)
    ax.bar(table.from_bytes, table.blocks, width=table.to_bytes - table.from_bytes, align="edge", edgecolor="black")
    ax.set_xlabel("block size")
    ax.set_ylabel("blocks")
    byte_axis(ax, "x")
    count_axis(ax, "y", log=spans_decades(table.blocks))
    if not table.blocks.sum():
        _no_data(ax)
    return fig


def plot_largest_files(report: DedupReport) -> Figure:
    table = report.tables["largest_files"].head(PLOTTED_ROWS)
    fig, (ax,) = _figure(f"Largest files (top {len(table)})", _bar_height(len(table)))
    ax.barh(np.arange(len(table)), table["size"], color="tab:grey")
    _row_labels(ax, table.id)
    ax.set_xlabel("size")
    byte_axis(ax, "x")
    if table.empty:
        _no_data(ax)
    return fig


FIGURES: dict[str, Callable[[DedupReport], Figure]] = {
    "prefixes": plot_prefixes, "sharing": plot_sharing, "growth": plot_growth,
    "new_bytes_by_prefix": plot_new_bytes, "block_sizes": plot_block_sizes, "largest_files": plot_largest_files,
}
