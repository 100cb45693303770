"""``spark-submit jobs/dedup_stats.py [--out plots/] [--depth N]``: the dedup report as text, JSON, CSV, PNG and HTML.

Totals (files, logical, unique and stored bytes, garbage, missing), what
removing each prefix at depth N would free (exclusive bytes, raw and as
stored, beside shared and logical bytes), the reference-count classes and
what each saved, the growth of the live data by commit time and the new
bytes per top-level prefix, block sizes, the most shared blocks and the
largest files: computed in Spark from the light tables (sums as 64-bit
integers). The summary goes to stdout; ``dedup_stats.json``, one CSV per
table, the PNG figures and ``dedup_report.html`` (self-contained) go to
``--out``. ``docs/dedup_report.md`` defines every figure.

Example::

    $ .venv/bin/spark-submit jobs/dedup_stats.py --out plots/ --depth 2 --top 10
"""

from __future__ import annotations

import argparse
from pathlib import Path

from casstor_ops.cli.args import OneLineParser, positive_int
from casstor_ops.ops.dedup_output import format_table, output_dir, render
from casstor_ops.ops.dedup_stats import compute
from casstor_ops.spark.job_runner import run_job


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="jobs/dedup_stats.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("plots"), help="output directory (default: plots/)")
    parser.add_argument("--depth", "--prefix-depth", dest="depth", type=positive_int, default=1, metavar="N",
                        help="directories of a file ID that make its prefix in the per-prefix table (default 1)")
    parser.add_argument("--top", type=positive_int, default=20, help="most-shared blocks to list (default 20)")
    parser.add_argument("--largest", type=positive_int, default=20, help="largest files to list (default 20)")
    return parser


def main(args: argparse.Namespace, spark) -> int:
    output_dir(args.out)  # an unusable --out fails before the Spark work, not after it
    report = compute(spark, top=args.top, depth=args.depth, largest=args.largest)
    written = render(report, args.out)
    print(format_table(report))
    print(f"\nwrote {len(written)} files to {args.out}/ (open {args.out / 'dedup_report.html'})")
    return 0


if __name__ == "__main__":
    run_job(main, build_parser(), app_name="casstor-dedup-stats")
