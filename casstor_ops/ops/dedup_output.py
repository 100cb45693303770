"""The dedup report as files and text: JSON, CSV, PNG, one self-contained HTML page, the job's summary.

:func:`render` writes, into one directory:

* ``dedup_stats.json``: ``depth``, ``totals`` and every table (exact integers,
  times in ISO 8601 UTC);
* ``dedup_totals.csv`` and ``<table>.csv`` per table;
* ``<figure>.png`` per figure of :data:`~casstor_ops.ops.dedup_plots.FIGURES`;
* ``dedup_report.html``: the :data:`SECTIONS` (a question, its figures as
  base64 ``data:`` URIs, its tables), the totals, and no external asset:
  it opens from a mail attachment or an air-gapped host as it is.

:func:`readable` is a table as people read it (``12.3 MiB``, ``1,024``,
UTC times): the HTML page, the job's text (:func:`format_table`) and
notebook 02 show the same.

Example::

    >>> render(report, Path("plots"))          # doctest: +SKIP
    [PosixPath('plots/dedup_stats.json'), ..., PosixPath('plots/dedup_report.html')]

Failures: a directory or file that cannot be written raises
:class:`~casstor_ops.errors.CasstorError` (the job prints it as one ``casstor:``
line, exit 1); each file is written under a temporary name and renamed into
place, so a failure leaves the previous file or none, never part of one.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from casstor_ops.errors import CasstorError
from casstor_ops.ops.dedup_plots import FIGURES
from casstor_ops.ops.dedup_report import GROWTH_DEFINITION, TABLES, DedupReport
from casstor_ops.ops.units import human_bytes

HTML_ROWS = 100  # rows of a table on the page; the CSV has them all


@dataclass(frozen=True)
class Section:
    """One question of the report: what it shows, its figures and its tables."""

    title: str
    text: str
    figures: tuple[str, ...]
    tables: tuple[str, ...]


SECTIONS = [
    Section("What would removing a prefix free?",
            "Files grouped by the first directories of their ID (the report's depth). Exclusive bytes are blocks "
            "no file outside the group names: removing the group's files and running reclaim frees them (stored "
            "bytes: as kept after compression). Shared bytes stay, other files name them too. Only committed "
            "versions count: superseded versions and removed files are garbage already.",
            ("prefixes",), ("prefixes",)),
    Section("How is sharing distributed?",
            "Referenced blocks by how many times committed files name them, in classes 1, 2, 3-4, 5-8, ... "
            "Saved bytes: (references - 1) x size, what deduplication saved in the class.",
            ("sharing",), ("sharing",)),
    Section("How did the store grow?", GROWTH_DEFINITION, ("growth", "new_bytes_by_prefix"),
            ("new_bytes_by_prefix", "growth")),
    Section("Blocks", "The stored blocks' sizes, and the blocks most files name.", ("block_sizes",),
            ("most_shared_blocks", "block_sizes")),
    Section("Largest files", "", ("largest_files",), ("largest_files",)),
    Section("What would forgetting free?",
            "The versions casstor forget would drop now (all of them, then per retention policy), and per snapshot "
            "the versions only that snapshot keeps (what removing it and a forget would drop). Exclusive bytes are "
            "blocks no other retained version names: forget and a reclaim free them; an inline version's "
            "content counts as exclusive bytes, no block.",
            (), ("forgetting",)),
]

LABELS = {
    "files": "files (committed)", "logical_bytes": "logical bytes", "unique_blocks": "unique blocks (stored)",
    "unique_bytes": "unique bytes (after dedup)", "stored_bytes": "stored bytes (after compression)",
    "dedup_ratio": "dedup ratio (logical/unique)", "compression_ratio": "compression ratio (unique/stored)",
    "referenced_blocks": "referenced blocks", "referenced_bytes": "referenced bytes",
    "block_references": "block references",
    "garbage_blocks": "garbage blocks (unreferenced)", "garbage_bytes": "garbage bytes",
    "missing_blocks": "missing blocks (referenced, not stored)",
    "non_head_block_lists": "non-head block lists (superseded/in progress)",
}


def _is_bytes(column: str) -> bool:
    return column.endswith("bytes") or column == "size"


def _cell(column: str, value) -> str:
    if isinstance(value, pd.Timestamp):
        return value.tz_convert("UTC").strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return human_bytes(value) if _is_bytes(column) else f"{value:,}"
    return str(value)


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as text people read: sizes in binary units, counts with separators, UTC times."""
    return pd.DataFrame({column.replace("_", " "): [_cell(column, v) for v in table[column].tolist()]
                         for column in table.columns}, columns=[c.replace("_", " ") for c in table.columns])


def _total(key: str, value) -> str:
    if key.endswith("_bytes"):
        return f"{human_bytes(value)}  ({value} B)"
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:.3f}"


def totals_table(report: DedupReport) -> pd.DataFrame:
    """The totals as ``figure`` / ``value`` text rows."""
    return pd.DataFrame([{"figure": LABELS[k], "value": _total(k, report.totals[k])} for k in LABELS])


def format_table(report: DedupReport, rows: int = 10) -> str:
    """The report as aligned text: totals, then the head of the main tables."""
    lines = ["casstor dedup report", ""]
    lines += [f"  {r.figure:<46} {r.value}" for r in totals_table(report).itertuples()]
    with pd.option_context("display.width", 200, "display.max_colwidth", 48):
        for name in ("prefixes", "sharing", "new_bytes_by_prefix", "largest_files", "forgetting"):
            table = report.tables[name]
            title = f"{name.replace('_', ' ')} (depth {report.depth})" if name == "prefixes" else \
                name.replace("_", " ")
            lines += ["", f"{title} (first {min(rows, len(table))} of {len(table)}):",
                      readable(table.head(rows)).to_string(index=False) if not table.empty else "  (none)"]
    return "\n".join(lines)


def _records(table: pd.DataFrame) -> list[dict]:
    return json.loads(table.to_json(orient="records", date_format="iso"))


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def _html_table(table: pd.DataFrame, name: str) -> str:
    note = f"<p class=note>first {HTML_ROWS} of {len(table):,} rows; all in {name}.csv</p>" \
        if len(table) > HTML_ROWS else ""
    body = readable(table.head(HTML_ROWS)).to_html(index=False, border=0, escape=True) if not table.empty \
        else "<p class=note>(none)</p>"
    return f"<h3>{html.escape(name.replace('_', ' '))}</h3>{note}{body}"


_STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{padding:.2em .7em;border-bottom:1px solid #ddd}
td{text-align:right;font-variant-numeric:tabular-nums}td:first-child{text-align:left;word-break:break-all}
img{max-width:100%}.note{color:#666;font-size:90%}"""


def html_page(report: DedupReport, images: dict[str, bytes]) -> str:
    """The self-contained page: totals, then each section's text, figures (``images``: PNG bytes) and tables."""
    parts = [f"<!DOCTYPE html><html><head><meta charset=utf-8><title>casstor dedup report</title>"
             f"<style>{_STYLE}</style></head><body><h1>casstor dedup report</h1>"
             f"<p class=note>generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC; prefix depth "
             f"{report.depth}</p><h2>Totals</h2>",
             totals_table(report).to_html(index=False, border=0, escape=True)]
    for section in SECTIONS:
        parts.append(f"<h2>{html.escape(section.title)}</h2><p>{html.escape(section.text)}</p>")
        parts += [f'<img alt="{name}" src="data:image/png;base64,{base64.b64encode(images[name]).decode()}">'
                  for name in section.figures]
        parts += [_html_table(report.tables[name], name) for name in section.tables]
    return "".join(parts) + "</body></html>\n"


def output_dir(out_dir: Path) -> Path:
    """``out_dir``, created if missing, with a file created in it and removed (an existing directory may be
    read-only); CasstorError (one line) when either fails."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".casstor-probe-"):
            pass
    except OSError as err:
        raise CasstorError(f"cannot write the report to {out_dir}: {err.strerror or err}") from None
    return out_dir


def _write(path: Path, content: bytes) -> None:
    # A temporary name, renamed into place: a failure leaves the old file or none, never half of one.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(content)
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise CasstorError(f"cannot write the report to {path}: {err.strerror or err}") from None


def render(report: DedupReport, out_dir: Path) -> list[Path]:
    """Write the JSON, CSV, PNG and HTML files (module docstring) into ``out_dir``; the paths written."""
    output_dir(out_dir)
    files = {"dedup_stats.json": json.dumps({"depth": report.depth, "totals": report.totals,
                                             **{name: _records(report.tables[name]) for name in TABLES}}, indent=2),
             "dedup_totals.csv": pd.DataFrame(list(report.totals.items()), columns=["figure", "value"]).to_csv(
                 index=False),
             **{f"{name}.csv": report.tables[name].to_csv(index=False) for name in TABLES}}
    images = {name: _png(draw(report)) for name, draw in FIGURES.items()}
    written = []
    for name, content in [*files.items(), *((f"{n}.png", png) for n, png in images.items()),
                          ("dedup_report.html", html_page(report, images))]:
        _write(out_dir / name, content if isinstance(content, bytes) else content.encode())
        written.append(out_dir / name)
    return written
