"""``spark-submit jobs/verify.py [--repair-index] [--json FILE]``: check every block, block list and index row.

Re-hashes every block (bit rot), resolves every committed version's block
list (or decodes and hashes an inline file's content), and compares the index (``existing_blocks``) with the blocks both
ways; ``--repair-index`` rewrites or deletes exactly the index rows that
differ (see :mod:`casstor_ops.ops.verify`). Prints counts per problem kind.

Exit status: 0 clean (or only index problems, all repaired), 3 corruption
(corrupt or missing blocks, broken block lists, damaged inline files) or index rows left wrong,
5 ``--repair-index`` during a reclaim window, 1 other errors.

The same job with the same flags and exit statuses, in-process on a local master
(or ``--master URL``): ``casstor verify`` (:mod:`casstor_ops.cli.cmd_maintenance`).

Example::

    $ .venv/bin/spark-submit jobs/verify.py
    $ .venv/bin/spark-submit jobs/verify.py --repair-index --json verify.json
"""

from __future__ import annotations

import argparse

from casstor_ops.cli.cmd_maintenance import VERIFY
from casstor_ops.spark.job_runner import run_job

main = VERIFY.main


def build_parser() -> argparse.ArgumentParser:
    return VERIFY.script_parser(__doc__)


if __name__ == "__main__":
    run_job(main, build_parser(), app_name=VERIFY.app_name)
