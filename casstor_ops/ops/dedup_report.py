"""The dedup report as data: its totals and tables, with what each column means.

:func:`casstor_ops.ops.dedup_stats.compute` fills a :class:`DedupReport`
in Spark; :mod:`casstor_ops.ops.dedup_output` writes it (JSON, CSV, PNG,
HTML) and :mod:`casstor_ops.ops.dedup_plots` draws it. Neither needs Spark,
so a report read back or built by hand renders the same way.

Example::

    >>> report = DedupReport.empty(depth=1)
    >>> report.tables["sharing"].columns[:3].tolist()
    ['refs_class', 'min_refs', 'max_refs']

Every byte figure is an exact integer (64-bit in the tables); nothing here raises.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# Table name -> its columns, in the order they are written.
COLUMNS: dict[str, list[str]] = {
    # Files grouped by the first ``depth`` directories of their ID; see dedup_sharing.
    "prefixes": ["prefix", "files", "logical_bytes", "unique_blocks", "unique_bytes", "exclusive_blocks",
                 "exclusive_bytes", "exclusive_stored_bytes", "shared_bytes", "dedup_ratio"],
    # Referenced blocks by number of references (log2 classes 1, 2, 3-4, 5-8, ...).
    "sharing": ["refs_class", "min_refs", "max_refs", "blocks", "bytes", "stored_bytes", "references",
                "saved_bytes"],
    # The heads' data, cumulative, by commit time; see dedup_growth.
    "growth": ["bin_start", "bin_end", "files", "logical_bytes", "unique_blocks", "unique_bytes", "stored_bytes"],
    # Per top-level prefix: the blocks it brought first (attributed to the earliest head naming them).
    "new_bytes_by_prefix": ["prefix", "files", "logical_bytes", "new_blocks", "new_bytes", "new_stored_bytes",
                            "first_commit", "last_commit"],
    # The same new bytes, cumulative over commit time, for the largest top-level prefixes and "(other)".
    "new_bytes_over_time": ["bin_end", "prefix", "new_bytes"],
    "block_sizes": ["from_bytes", "to_bytes", "blocks", "bytes"],
    "most_shared_blocks": ["hash", "size", "refs"],
    "largest_files": ["id", "size", "blocks", "committed_at"],
    # What forget would drop, per policy and per snapshot, and the bytes only those versions name; see
    # dedup_forgetting.
    "forgetting": ["scope", "name", "prefix", "rule", "versions", "logical_bytes", "exclusive_blocks",
                   "exclusive_bytes", "exclusive_stored_bytes"],
}
TABLES = tuple(COLUMNS)

GROWTH_DEFINITION = (
    "Growth of the data the store holds now: each file at the commit of its current version, each block at the "
    "earliest committed file that names it (its top-level prefix is the one that brought it). Cumulative "
    "logical, unique and stored bytes up to each time. Overwritten versions and removed files are not in it "
    "(the store keeps no history of them), so this is when today's data was first committed, not the store's "
    "size on a past day.")


@dataclass
class DedupReport:
    """Totals and small tables (pandas, columns as :data:`COLUMNS`), ready to print, plot or save.

    ``depth`` is the prefix depth of the ``prefixes`` table.
    """

    totals: dict[str, int | float | None]
    tables: dict[str, pd.DataFrame]
    depth: int = 1

    @classmethod
    def empty(cls, depth: int = 1) -> "DedupReport":
        """A report with no totals and empty tables (for tests and for drawing "no data")."""
        return cls({}, {name: pd.DataFrame(columns=columns) for name, columns in COLUMNS.items()}, depth)
