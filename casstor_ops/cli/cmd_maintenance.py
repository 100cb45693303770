"""``casstor reclaim``, ``verify``, ``report``, ``upgrade``: the maintenance Spark jobs from the command line.

Each job is defined once here, its flags and its body, and run two ways
with the same flags and exit statuses: ``spark-submit jobs/reclaim.py``
(``jobs/verify.py``, ``jobs/dedup_stats.py``, ``jobs/upgrade.py``: the cluster route, any
master and deploy mode) and ``casstor reclaim`` (the everyday one), which
runs the job in this process on a SparkSession of its own: on ``--master
URL``, else the ``spark.master`` of ``spark-defaults.conf``, else
``local[2]``. A usage mistake is one line and exit 2 before Spark starts;
a job's failure is one ``casstor:`` line and its exit code
(:func:`~casstor_ops.errors.run_reporting_errors`).

Example::

    $ casstor verify --json verify.json              # exit 3 on a damaged block
    $ casstor reclaim --dry-run
    $ casstor report --out plots/ --depth 2 --master spark://head:7077
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from casstor_ops.cli.args import OneLineParser, positive_int
from casstor_ops.errors import CasstorError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The master of 'casstor reclaim' etc. when neither --master nor spark-defaults.conf names one.
LOCAL_MASTER = "local[2]"


# The job bodies import Spark and their ops modules when they run: 'casstor ls' must not load them.

def _reclaim_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print the plan, delete nothing, take no window")
    parser.add_argument("--online", action="store_true", help="no write window: stores keep running")
    parser.add_argument("--force", action="store_true", help="delete even though referenced blocks are missing")
    parser.add_argument("--clear-window", action="store_true",
                        help="clear the window a crashed reclaim left open, and exit")
    parser.add_argument("--scan-blocks", action="store_true",
                        help="also find block content without an index row (reads the blob table)")


def _reclaim(args: argparse.Namespace, spark: "SparkSession") -> int:
    from casstor_ops.cluster.connection import connect
    from casstor_ops.ops.reclaim import reclaim
    from casstor_ops.store.coordination.reclaim_window import clear_window

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


def _verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repair-index", action="store_true",
                        help="insert, rewrite or delete the index rows that differ from the blocks")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the report as JSON")


def _verify(args: argparse.Namespace, spark: "SparkSession") -> int:
    from casstor_ops.ops.verify import verify

    report = verify(spark, repair_index=args.repair_index)
    print(report.table())
    if args.json:
        try:
            args.json.write_text(json.dumps(report.as_dict(), indent=2))
        except OSError as err:
            raise CasstorError(f"cannot write {str(args.json)!r}: {err.strerror or err}") from None
    return report.exit_code


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("plots"), help="output directory (default: plots/)")
    parser.add_argument("--depth", "--prefix-depth", dest="depth", type=positive_int, default=1, metavar="N",
                        help="directories of a file ID that make its prefix in the per-prefix table (default 1)")
    parser.add_argument("--top", type=positive_int, default=20, help="most-shared blocks to list (default 20)")
    parser.add_argument("--largest", type=positive_int, default=20, help="largest files to list (default 20)")


def _report(args: argparse.Namespace, spark: "SparkSession") -> int:
    from casstor_ops.ops.dedup_output import format_table, output_dir, render
    from casstor_ops.ops.dedup_stats import compute

    output_dir(args.out)  # an unusable --out fails before the Spark work, not after it
    report = compute(spark, top=args.top, depth=args.depth, largest=args.largest)
    written = render(report, args.out)
    print(format_table(report))
    print(f"\nwrote {len(written)} files to {args.out}/ (open {args.out / 'dedup_report.html'})")
    return 0


def _upgrade(args: argparse.Namespace, spark: "SparkSession") -> int:
    from casstor_ops.cli.cmd_init import log_progress, print_settings
    from casstor_ops.cluster.connection import connect
    from casstor_ops.ops.upgrade import needs_upgrade, upgrade

    session = connect(start=False)
    try:
        if not needs_upgrade(session):
            print("the store already has this casstor's schema: nothing to upgrade")
            return 0
        print_settings(session, upgrade(spark, session, log=log_progress))
        return 0
    finally:
        session.cluster.shutdown()


@dataclass(frozen=True)
class MaintenanceJob:
    """A Spark job that is both ``spark-submit <script>`` and ``casstor <command>``: one set of flags, one body."""

    command: str
    script: str
    app_name: str
    summary: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    main: Callable[[argparse.Namespace, "SparkSession"], int]

    def script_parser(self, doc: str) -> argparse.ArgumentParser:
        """The job script's parser, described by the first paragraph of its docstring ``doc``."""
        parser = OneLineParser(prog=self.script, description=doc.split("\n\n")[0])
        self.add_arguments(parser)
        return parser


RECLAIM = MaintenanceJob("reclaim", "jobs/reclaim.py", "casstor-reclaim",
                         "free the blocks no committed file references (exit 3 when referenced ones are missing)",
                         _reclaim_arguments, _reclaim)
VERIFY = MaintenanceJob("verify", "jobs/verify.py", "casstor-verify",
                        "re-hash every block, check every block list and the index (exit 3 on corruption)",
                        _verify_arguments, _verify)
REPORT = MaintenanceJob("report", "jobs/dedup_stats.py", "casstor-dedup-stats",
                        "the dedup report: text on stdout; JSON, CSV, PNG and HTML in --out",
                        _report_arguments, _report)
UPGRADE = MaintenanceJob("upgrade", "jobs/upgrade.py", "casstor-upgrade",
                         "upgrade a store of an older schema in place as 'casstor init' does, its heads copied by "
                         "Spark tasks (for a large store)", lambda parser: None, _upgrade)


def _run(job: MaintenanceJob, args: argparse.Namespace) -> int:
    from casstor_ops.spark.job_runner import run_in_session

    # spark-submit, which starts this process's JVM, reads $MASTER after spark-defaults.conf's spark.master: so
    # local[2] only when the defaults name no master (and a MASTER the user exported still wins, as there).
    os.environ.setdefault("MASTER", LOCAL_MASTER)
    return run_in_session(job.main, args, job.app_name, master=args.master)


def register(sub: argparse._SubParsersAction) -> None:
    for job in (RECLAIM, VERIFY, REPORT, UPGRADE):
        p = sub.add_parser(job.command, help=job.summary, description=f"{job.summary}; as 'spark-submit {job.script}'")
        job.add_arguments(p)
        p.add_argument("--master", metavar="URL",
                       help=f"Spark master (default: spark.master in spark-defaults.conf, else {LOCAL_MASTER})")
        p.set_defaults(func=lambda args, job=job: _run(job, args))
