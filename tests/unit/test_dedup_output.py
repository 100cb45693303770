"""The dedup report's pure parts: classes, time bins, readable axes and labels, the self-contained HTML page.

No node and no Spark: the report is built by hand, as ``compute`` would fill it.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from casstor_ops.cli.args import positive_int
from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.ops.dedup_growth import MAX_BINS, bin_width_ms
from casstor_ops.ops.dedup_output import SECTIONS, output_dir, readable, render
from casstor_ops.ops.dedup_plots import FIGURES, LABEL_WIDTH
from casstor_ops.ops.dedup_report import COLUMNS, TABLES, DedupReport
from casstor_ops.ops.dedup_sharing import class_bounds, class_label
from casstor_ops.ops.readable_axes import byte_label, count_label, shorten, spans_decades
from tests.support import ROOT

LONG = "customers/very-long-customer-name-incorporated/exports/2024/daily/with/more/levels"
T0 = pd.Timestamp("2024-03-01T10:00:00Z")


def test_reference_count_classes_are_log2_buckets() -> None:
    assert [class_label(k) for k in range(6)] == ["1", "2", "3-4", "5-8", "9-16", "17-32"]
    # Every count falls in exactly one class, the classes tile 1..2^20 without gaps.
    bounds = [class_bounds(k) for k in range(21)]
    assert all(high + 1 == next_low for (_, high), (next_low, _) in zip(bounds, bounds[1:]))
    assert bounds[0] == (1, 1) and bounds[-1][1] == 1 << 20


@pytest.mark.parametrize("span_ms, width", [(0, 1), (99, 1), (100, 2), (3_600_000, 60_000),
                                            (86_400_000 * 30, 43_200_000), (86_400_000 * 365 * 500, None)])
def test_time_bins_are_round_and_at_most_max_bins(span_ms: int, width: int | None) -> None:
    first = 1_700_000_000_123
    chosen = bin_width_ms(first, first + span_ms)
    assert chosen == width or width is None
    assert (first + span_ms) // chosen - first // chosen < MAX_BINS


def test_readable_labels() -> None:
    assert [byte_label(v) for v in (0, 512, 1536, 3 << 20, 5 << 40)] == ["0 B", "512 B", "1.5 KiB", "3 MiB", "5 TiB"]
    assert [count_label(v) for v in (1, 950, 25_000, 1_200_000, 3e9)] == ["1", "950", "25k", "1.2M", "3bn"]
    assert spans_decades([0, 1, 100]) and not spans_decades([0, 5, 400]) and not spans_decades([])
    short = shorten(LONG, 30)
    assert len(short) == 30 and short.startswith("customers/") and short.endswith("/levels") and "…" in short
    assert shorten("short/prefix", 30) == "short/prefix"


def _report() -> DedupReport:
    """A small report with the shapes compute() returns: long prefixes, decades of counts, several bins."""
    bins = [T0 + pd.Timedelta(minutes=m) for m in range(4)]
    tables = {
        "prefixes": pd.DataFrame([[f"{LONG}/{i}", 3, 10 << 20, 40, 5 << 20, 10, 1 << 20, 700_000, 4 << 20, 2.0]
                                  for i in range(20)], columns=COLUMNS["prefixes"]),
        "sharing": pd.DataFrame([["1", 1, 1, 90_000, 4 << 30, 3 << 30, 90_000, 0],
                                 ["2", 2, 2, 0, 0, 0, 0, 0],
                                 ["3-4", 3, 4, 12, 600_000, 500_000, 40, 1_800_000]], columns=COLUMNS["sharing"]),
        "growth": pd.DataFrame([[b, b + pd.Timedelta(minutes=1), i + 1, (i + 1) << 30, 100 * (i + 1),
                                 (i + 1) << 28, (i + 1) << 27] for i, b in enumerate(bins)], columns=COLUMNS["growth"]),
        "new_bytes_by_prefix": pd.DataFrame([[LONG, 4, 4 << 30, 400, 1 << 30, 1 << 29, bins[0], bins[-1]]],
                                            columns=COLUMNS["new_bytes_by_prefix"]),
        "new_bytes_over_time": pd.DataFrame([[b + pd.Timedelta(minutes=1), p, (i + 1) << 27] for p in (LONG, "(other)")
                                             for i, b in enumerate(bins)], columns=COLUMNS["new_bytes_over_time"]),
        "block_sizes": pd.DataFrame([[i << 14, (i + 1) << 14, 10 ** (i % 5), (10 ** (i % 5)) << 14] for i in range(16)],
                                    columns=COLUMNS["block_sizes"]),
        "most_shared_blocks": pd.DataFrame([["ab" * 32, 65536, 4]], columns=COLUMNS["most_shared_blocks"]),
        "largest_files": pd.DataFrame([[f"{LONG}/file-{i}.bin", 5 << 30, 100, bins[0]] for i in range(20)],
                                      columns=COLUMNS["largest_files"]),
        "forgetting": pd.DataFrame([["forget", "(all)", "", "", 3, 3 << 20, 2, 2 << 20, 1 << 20],
                                    ["policy", "a/", "a/", "--keep-last 2", 3, 3 << 20, 2, 2 << 20, 1 << 20],
                                    ["snapshot", "before", "a/", "2024-03-01T10:00:00.000Z", 0, 0, 0, 0, 0]],
                                   columns=COLUMNS["forgetting"]),
    }
    totals = {"files": 4, "logical_bytes": 4 << 30, "unique_blocks": 400, "unique_bytes": 1 << 30,
              "stored_bytes": 1 << 29, "dedup_ratio": 4.0, "compression_ratio": 2.0, "referenced_blocks": 400,
              "referenced_bytes": 1 << 30, "block_references": 1600, "garbage_blocks": 0, "garbage_bytes": 0,
              "missing_blocks": 0, "non_head_block_lists": 0}
    return DedupReport(totals, tables, depth=3)


@pytest.mark.parametrize("name", list(FIGURES))
def test_figures_keep_every_label_inside_the_image(name: str) -> None:
    fig = FIGURES[name](_report())
    canvas = FigureCanvasAgg(fig)  # the renderer savefig uses for PNG
    canvas.draw()
    # Everything drawn (titles, tick labels, legends, annotations) lies inside the saved image.
    drawn, image = fig.get_tightbbox(canvas.get_renderer()), fig.bbox_inches
    assert image.x0 - 0.01 <= drawn.x0 and drawn.x1 <= image.x1 + 0.01, (name, drawn, image)
    assert image.y0 - 0.01 <= drawn.y0 and drawn.y1 <= image.y1 + 0.01, (name, drawn, image)
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels() + ax.get_xticklabels()]
    assert all(len(label) <= LABEL_WIDTH for label in labels), labels


def test_byte_axes_read_in_binary_units() -> None:
    fig = FIGURES["growth"](_report())
    FigureCanvasAgg(fig).draw()
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert ticks and all(re.fullmatch(r"[0-9.]+ (B|KiB|MiB|GiB|TiB)", t) for t in ticks), ticks
    sharing = FIGURES["sharing"](_report())
    assert [ax.get_yscale() for ax in sharing.axes] == ["log", "log"]


def test_html_page_is_self_contained_with_every_figure_and_table(tmp_path: Path) -> None:
    written = render(_report(), tmp_path)
    names = {p.name for p in written}
    assert {"dedup_stats.json", "dedup_totals.csv", "dedup_report.html"} <= names
    assert {f"{t}.csv" for t in TABLES} <= names and {f"{f}.png" for f in FIGURES} <= names
    page = (tmp_path / "dedup_report.html").read_text()
    sources = re.findall(r'\b(?:src|href)="([^"]*)"', page)
    assert len(sources) == len(FIGURES) and all(s.startswith("data:image/png;base64,") for s in sources)
    assert base64.b64decode(sources[0].split(",", 1)[1]) == (tmp_path / "prefixes.png").read_bytes()
    assert "<link" not in page and "<script" not in page and "url(" not in page
    for section in SECTIONS:
        assert section.title.replace("'", "&#x27;") in page
    assert "first 100 of" not in page and LONG in page  # the page shows the full prefix, the plot shortens it
    data = json.loads((tmp_path / "dedup_stats.json").read_text())
    assert data["depth"] == 3 and data["growth"][0]["bin_start"] == "2024-03-01T10:00:00.000Z"


def test_an_empty_store_renders_no_data(tmp_path: Path) -> None:
    report = DedupReport.empty()
    report.totals.update(_report().totals)
    assert len(render(report, tmp_path)) == 3 + len(TABLES) + len(FIGURES)
    assert "(none)" in (tmp_path / "dedup_report.html").read_text()


def test_readable_tables() -> None:
    shown = readable(_report().tables["sharing"])
    assert list(shown.columns)[:3] == ["refs class", "min refs", "max refs"]
    assert shown.iloc[0].tolist() == ["1", "1", "1", "90,000", "4.00 GiB", "3.00 GiB", "90,000", "0 B"]
    assert readable(_report().tables["growth"]).iloc[0]["bin start"] == "2024-03-01 10:00:00 UTC"


@pytest.mark.parametrize("text", ["0", "-1", "x", "1.5", "٣"])
def test_a_count_below_one_or_not_a_whole_number_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected a whole number of at least 1"):
        positive_int(text)
    assert positive_int("3") == 3


def test_job_refuses_depth_zero_in_one_line_before_spark_starts() -> None:
    run = subprocess.run([sys.executable, "jobs/dedup_stats.py", "--depth", "0"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert run.returncode == EXIT_USAGE and run.stdout == ""
    assert run.stderr.splitlines() == ["jobs/dedup_stats.py: error: argument --depth/--prefix-depth: '0': expected a "
                                       "whole number of at least 1 (see 'jobs/dedup_stats.py --help')"]


def test_an_unwritable_output_is_one_error_and_leaves_no_part_of_a_file(tmp_path: Path) -> None:
    """Injects: --out naming a regular file; then a report file whose name is taken by a directory.
    Checks: one CasstorError line each, no traceback-bound OSError, no temporary or partial file left."""
    (tmp_path / "taken").write_text("not a directory")
    with pytest.raises(CasstorError, match=r"^cannot write the report to .*taken/plots: Not a directory$"):
        render(_report(), tmp_path / "taken" / "plots")
    (tmp_path / "out" / "growth.png").mkdir(parents=True)
    with pytest.raises(CasstorError, match=r"^cannot write the report to .*growth\.png: Is a directory$"):
        render(_report(), tmp_path / "out")
    left = {p.name for p in (tmp_path / "out").iterdir()}
    assert not [name for name in left if name.endswith(".tmp")], left
    assert "dedup_stats.json" in left and json.loads((tmp_path / "out" / "dedup_stats.json").read_text())["depth"] == 3


def test_job_checks_its_output_directory_before_the_spark_work(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    job = runpy.run_path(str(ROOT / "jobs" / "dedup_stats.py"), run_name="probe")
    args = job["build_parser"]().parse_args(["--out", str(tmp_path / "taken")])
    with pytest.raises(CasstorError, match="cannot write the report to"):
        job["main"](args, None)  # no SparkSession: it must fail before using one


PROBE = """import sys
from pathlib import Path
from casstor_ops.errors import CasstorError
from casstor_ops.ops.dedup_output import output_dir
try:
    output_dir(Path(sys.argv[1]))
except CasstorError as err:
    sys.exit(f"casstor: {err}")
"""


def test_an_existing_read_only_output_directory_is_refused_before_the_spark_work() -> None:
    """Injects: an existing --out directory of mode 0555 that the job's user does not own (as root, which
    ignores modes, the check runs as user nobody through setpriv). Checks: the check made before the Spark work
    fails with one `cannot write the report to …: Permission denied` line, and leaves nothing in the directory."""
    with tempfile.TemporaryDirectory(dir="/tmp") as top:
        os.chmod(top, 0o755)
        out = Path(top) / "read-only"
        out.mkdir(mode=0o555)
        out.chmod(0o555)
        if os.geteuid() == 0:
            (Path(top) / "mpl").mkdir(mode=0o777)
            (Path(top) / "mpl").chmod(0o777)  # matplotlib's cache: somewhere nobody may write
            run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                                  "-c", PROBE, str(out)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                                 env={**os.environ, "PYTHONPATH": str(ROOT), "MPLCONFIGDIR": f"{top}/mpl"})
            assert run.returncode == 1, run.stderr
            message = run.stderr.strip().splitlines()[-1]
        else:
            with pytest.raises(CasstorError) as raised:
                output_dir(out)
            message = f"casstor: {raised.value}"
        assert re.fullmatch(r"casstor: cannot write the report to .*/read-only: Permission denied", message), message
        assert list(out.iterdir()) == []
