"""``spark-submit jobs/ingest.py SRC [--prefix P] [--report out.json] [--follow-symlinks] [--storage-option K=V] [--storage-options-file PATH]``: parallel, resumable bulk ingest.

SRC is a directory, a quoted glob (``'data/**/*.bin'``) or several paths,
readable at the same path by every executor, or the URL of a directory, a
file or a glob on any filesystem fsspec supports (``s3://bucket/tree/``,
``file:///data``, ``hdfs://…``), which the executors read through it
(``--storage-option KEY=VALUE``, repeatable, no secret; keys in a 0600
``--storage-options-file``; and ``FSSPEC_<PROTOCOL>_<KEY>`` variables
configure it: :mod:`casstor_ops.store.trees.locations`). Each file is stored as
PREFIX + its path relative to SRC; files already committed unchanged are
skipped, so re-running after a failure or an interruption resumes.
Progress (files, MB, MB/s, ETA) goes to stderr, a summary to stdout.

No symlink below SRC is followed unless ``--follow-symlinks`` (never the
same directory twice, so no loop): a symlinked directory is not entered, a
symlink to a file is a ``skipped`` row ("symlink, not followed", one line on
stderr, exit 0), and a file swapped for a link after the listing fails. A
file name that is not valid UTF-8 is stored under an escaped ID that
``jobs/restore.py`` turns back into the same bytes
(:mod:`casstor_ops.store.trees.path_ids`).

Exit status: 0 when every file was stored or skipped, 4 (EXIT_PARTIAL)
when some failed, or a directory could not be listed (each named on
stderr, all in the report), 1 for a source that does not exist or holds
no files, 2 for a PREFIX that cannot start an ID (``/abs/``, ``a//``),
6 when Cassandra became unreachable (a re-run resumes).

Example::

    $ .venv/bin/spark-submit jobs/ingest.py ~/photos --prefix photos/ --report ingest.json
    $ CASSTOR_NODES=10.0.0.1,10.0.0.2 spark-submit --master spark://head:7077 jobs/ingest.py /shared/data
    $ spark-submit jobs/ingest.py s3://bucket/photos/ --prefix photos/ --storage-option endpoint_url=http://s3:9000
"""

from __future__ import annotations

import argparse

from casstor_ops.spark.bulk_report import finish
from casstor_ops.cli.args import OneLineParser, add_storage_options
from casstor_ops.spark.job_progress import print_progress
from casstor_ops.spark.job_runner import run_job
from casstor_ops.spark.bulk_ingest import ingest


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="jobs/ingest.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="+", metavar="SRC",
                        help="a directory, a quoted glob, file paths, or one URL (s3://bucket/tree/, file:///data)")
    parser.add_argument("--prefix", default="", help="prepended to every id (e.g. 'photos/')")
    parser.add_argument("--report", metavar="FILE", help="write per-file results and totals as JSON")
    parser.add_argument("--parallelism", type=int, help="number of tasks (default: 2 per core)")
    add_storage_options(parser)
    parser.add_argument("--max-file-size", type=int, metavar="BYTES", help="record larger files as failed")
    parser.add_argument("--follow-symlinks", action="store_true",
                        help="follow symlinks below SRC: enter linked directories (each once) and read linked files")
    return parser


def main(args: argparse.Namespace, spark) -> int:
    source = args.source[0] if len(args.source) == 1 else args.source
    results = ingest(spark, source, prefix=args.prefix, parallelism=args.parallelism,
                     max_file_bytes=args.max_file_size, progress=print_progress("ingest"),
                     follow_symlinks=args.follow_symlinks,
                     storage_options=args.storage_options)
    return finish(results, "ingest", args.report)


if __name__ == "__main__":
    run_job(main, build_parser(), app_name="casstor-ingest")
