"""``spark-submit jobs/restore.py PREFIX DEST [--at TIME] [--force] [--report out.json] [--storage-option K=V] [--storage-options-file PATH]``: parallel verified restore.

Every file whose id starts with PREFIX is restored to DEST/<id> by the
executors, each hash-checked before it is moved into place (or, on an
object store, before its upload is committed). DEST is a local path,
writable at the same path by the executors (local for the local node, a
shared mount on a cluster), or the URL of a directory on any filesystem
fsspec supports (``s3://bucket/out/``), which the executors write through
(``--storage-option KEY=VALUE``, repeatable, no secret; keys in a 0600
``--storage-options-file``: :mod:`casstor_ops.store.trees.locations`); a bucket that does not exist is
refused, not created. Existing files are not overwritten unless
``--force``, as with ``casstor restore``.

Exit status: 0 when every file was restored, 4 (EXIT_PARTIAL) when some
failed, 3 when a block was missing or corrupt, 1 when PREFIX names no file.
``--at TIME`` (ISO 8601, no zone: UTC) restores the files as they were then:
the driver finds each file's version at TIME, the executors restore exactly
those versions (files removed since included, files added since left out).

Example::

    $ .venv/bin/spark-submit jobs/restore.py photos/ /tmp/restore
"""

from __future__ import annotations

import argparse

from casstor_ops.spark.bulk_report import finish
from casstor_ops.cli.args import OneLineParser, add_storage_options, time_argument
from casstor_ops.spark.job_progress import print_progress
from casstor_ops.spark.job_runner import run_job
from casstor_ops.spark.bulk_restore import restore_many


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="jobs/restore.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", metavar="PREFIX", help="restore every id starting with this ('' for all)")
    parser.add_argument("dest", metavar="DEST",
                        help="directory to restore into (created if missing), or its URL (s3://bucket/out/)")
    parser.add_argument("--at", type=time_argument, metavar="TIME",
                        help="the files as they were at TIME (ISO 8601; no zone: UTC)")
    parser.add_argument("--force", action="store_true", help="overwrite files that exist in DEST")
    parser.add_argument("--report", metavar="FILE", help="write per-file results and totals as JSON")
    parser.add_argument("--parallelism", type=int, help="number of tasks (default: 2 per core)")
    add_storage_options(parser)
    return parser


def main(args: argparse.Namespace, spark) -> int:
    results = restore_many(spark, args.prefix, args.dest, force=args.force, parallelism=args.parallelism,
                           progress=print_progress("restore"),
                           storage_options=args.storage_options, at=args.at)
    return finish(results, "restore", args.report)


if __name__ == "__main__":
    run_job(main, build_parser(), app_name="casstor-restore")
