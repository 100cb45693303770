"""``spark-submit jobs/dedup_stats.py [--out plots/]``: the dedup report as a table, JSON, CSV and PNG plots.

Files, logical bytes, unique blocks, stored bytes, dedup ratio, garbage,
block size histogram, most-shared blocks, a per-prefix breakdown and the
largest files, computed in Spark from the light tables (sums as 64-bit
integers). The table goes to stdout; ``dedup_stats.json``, one CSV per
table and the plots go to ``--out``.

Example::

    $ .venv/bin/spark-submit jobs/dedup_stats.py --out plots/ --prefix-depth 2 --top 10
"""

from __future__ import annotations

import argparse
from pathlib import Path

from casstor_ops.ops.dedup_stats import compute, format_table, render
from casstor_ops.cli.args import OneLineParser
from casstor_ops.spark.job_runner import run_job


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="jobs/dedup_stats.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("plots"), help="output directory (default: plots/)")
    parser.add_argument("--top", type=int, default=20, help="most-shared blocks to list (default 20)")
    parser.add_argument("--largest", type=int, default=20, help="largest files to list (default 20)")
    parser.add_argument("--prefix-depth", type=int, default=1,
                        help="path components of the file ID that make its prefix (default 1)")
    return parser


def main(args: argparse.Namespace, spark) -> int:
    report = compute(spark, top=args.top, prefix_depth=args.prefix_depth, largest=args.largest)
    written = render(report, args.out)
    print(format_table(report))
    print(f"\nwrote {len(written)} files to {args.out}/")
    return 0


if __name__ == "__main__":
    run_job(main, build_parser(), app_name="casstor-dedup-stats")
