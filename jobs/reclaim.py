"""``spark-submit jobs/reclaim.py [--dry-run] [--online] [--force] [--clear-window] [--scan-blocks]``: free unused blocks.

Plans (blocks no committed file references, superseded block lists),
prints the plan, then deletes. By default inside a reclaim window:
``casstor store``/``rm`` and ingest refuse to start (exit 5) and reclaim
waits for running writers first. ``--online`` keeps stores running (see
:mod:`casstor_ops.ops.reclaim` for the protocol). A reclaim that crashed leaves
its window open: re-run to resume, or ``--clear-window`` to clear it.

Exit status: 0 done (or nothing to do), 3 referenced blocks are missing
(nothing deleted unless ``--force``), 5 another reclaim (or a
``verify --repair-index``) holds the window, 1 other errors, among them
``--online`` refused because a node's clock may differ from this host's by
more than the protocol's bound.

Example::

    $ .venv/bin/spark-submit jobs/reclaim.py --dry-run
    $ .venv/bin/spark-submit jobs/reclaim.py --online
"""

from __future__ import annotations

import argparse

from casstor_ops.cluster.connection import connect
from casstor_ops.cli.args import OneLineParser
from casstor_ops.spark.job_runner import run_job
from casstor_ops.store.coordination.reclaim_window import clear_window
from casstor_ops.ops.reclaim import reclaim


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="jobs/reclaim.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the plan, delete nothing, take no window")
    parser.add_argument("--online", action="store_true", help="no write window: stores keep running")
    parser.add_argument("--force", action="store_true", help="delete even though referenced blocks are missing")
    parser.add_argument("--clear-window", action="store_true",
                        help="clear the window a crashed reclaim left open, and exit")
    parser.add_argument("--scan-blocks", action="store_true",
                        help="also find block content without an index row (reads the blob table)")
    return parser


def main(args: argparse.Namespace, spark) -> int:
    session = connect(start=False)
    try:
        if args.clear_window:
            cleared = clear_window(session)
            print(f"cleared the {cleared.describe()}" if cleared else "no reclaim window was open")
            return 0
        return reclaim(spark, session, online=args.online, dry_run=args.dry_run, force=args.force,
                       scan_blocks=args.scan_blocks).exit_code
    finally:
        session.cluster.shutdown()


if __name__ == "__main__":
    run_job(main, build_parser(), app_name="casstor-reclaim")
