"""``spark-submit jobs/ingest.py SRC [--prefix P] [--report out.json]``: parallel, resumable bulk ingest.

SRC is a directory, a quoted glob (``'data/**/*.bin'``) or several paths,
readable at the same path by every executor. Each file is stored as
PREFIX + its path relative to SRC; files already committed unchanged are
skipped, so re-running after a failure or an interruption resumes.
Progress (files, MB, MB/s, ETA) goes to stderr, a summary to stdout.

Exit status: 0 when every file was stored or skipped, 4 (EXIT_PARTIAL)
when some failed (each named on stderr, all in the report), 1 for a
source that does not exist or holds no files.

Example::

    $ .venv/bin/spark-submit jobs/ingest.py ~/photos --prefix photos/ --report ingest.json
    $ CASSTOR_NODES=10.0.0.1,10.0.0.2 spark-submit --master spark://head:7077 jobs/ingest.py /shared/data
"""

from __future__ import annotations

import argparse

from casstor_ops.bulk_report import finish
from casstor_ops.cli import OneLineParser
from casstor_ops.job_progress import print_progress
from casstor_ops.job_runner import run_job
from casstor_ops.spark_ingest import ingest


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="jobs/ingest.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="+", metavar="SRC", help="a directory, a quoted glob, or file paths")
    parser.add_argument("--prefix", default="", help="prepended to every id (e.g. 'photos/')")
    parser.add_argument("--report", metavar="FILE", help="write per-file results and totals as JSON")
    parser.add_argument("--parallelism", type=int, help="number of tasks (default: 2 per core)")
    parser.add_argument("--max-file-size", type=int, metavar="BYTES", help="record larger files as failed")
    return parser


def main(args: argparse.Namespace, spark) -> int:
    source = args.source[0] if len(args.source) == 1 else args.source
    results = ingest(spark, source, prefix=args.prefix, parallelism=args.parallelism,
                     max_file_bytes=args.max_file_size, progress=print_progress("ingest"))
    return finish(results, "ingest", args.report)


if __name__ == "__main__":
    run_job(main, build_parser(), app_name="casstor-ingest")
