"""``spark-submit jobs/verify.py [--repair-index] [--json FILE]``: check every block, block list and index row.

Re-hashes every block (bit rot), resolves every committed version's block
list (or decodes and hashes an inline file's content), and compares the index (``existing_blocks``) with the blocks both
ways; ``--repair-index`` rewrites or deletes exactly the index rows that
differ (see :mod:`casstor_ops.ops.verify`). Prints counts per problem kind.

Exit status: 0 clean (or only index problems, all repaired), 3 corruption
(corrupt or missing blocks, broken block lists, damaged inline files) or index rows left wrong,
5 ``--repair-index`` during a reclaim window, 1 other errors.

Example::

    $ .venv/bin/spark-submit jobs/verify.py
    $ .venv/bin/spark-submit jobs/verify.py --repair-index --json verify.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from casstor_ops.errors import CasstorError
from casstor_ops.cli.args import OneLineParser
from casstor_ops.spark.job_runner import run_job
from casstor_ops.ops.verify import verify


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="jobs/verify.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repair-index", action="store_true",
                        help="insert, rewrite or delete the index rows that differ from the blocks")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the report as JSON")
    return parser


def main(args: argparse.Namespace, spark) -> int:
    report = verify(spark, repair_index=args.repair_index)
    print(report.table())
    if args.json:
        try:
            args.json.write_text(json.dumps(report.as_dict(), indent=2))
        except OSError as err:
            raise CasstorError(f"cannot write {str(args.json)!r}: {err.strerror or err}") from None
    return report.exit_code


if __name__ == "__main__":
    run_job(main, build_parser(), app_name="casstor-verify")
