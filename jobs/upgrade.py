"""``spark-submit jobs/upgrade.py``: upgrade a store of an older schema in place, its heads copied by Spark tasks.

The same upgrade as ``casstor init`` (the offline window, the checks,
``schema_version`` written last, resumable after a kill), with the copy of
schema 4's heads split by token range across the executors
(:mod:`casstor_ops.ops.upgrade`): for a store too large for one client to
copy in its maintenance window. Progress on stderr, the settings on stdout.

Exit status: 0 upgraded (or nothing to upgrade), 9 a store that is not
initialised, 5 another maintenance window open or writers still running,
1 other errors.

The same job in-process on a local master (or ``--master URL``): ``casstor
upgrade`` (:mod:`casstor_ops.cli.cmd_maintenance`).

Example::

    $ .venv/bin/spark-submit --master spark://head:7077 jobs/upgrade.py
"""

from __future__ import annotations

import argparse

from casstor_ops.cli.cmd_maintenance import UPGRADE
from casstor_ops.spark.job_runner import run_job

main = UPGRADE.main


def build_parser() -> argparse.ArgumentParser:
    return UPGRADE.script_parser(__doc__)


if __name__ == "__main__":
    run_job(main, build_parser(), app_name=UPGRADE.app_name)
