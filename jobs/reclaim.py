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

The same job with the same flags and exit statuses, in-process on a local master
(or ``--master URL``): ``casstor reclaim`` (:mod:`casstor_ops.cli.cmd_maintenance`).

Example::

    $ .venv/bin/spark-submit jobs/reclaim.py --dry-run
    $ .venv/bin/spark-submit jobs/reclaim.py --online
"""

from __future__ import annotations

import argparse

from casstor_ops.cli.cmd_maintenance import RECLAIM
from casstor_ops.spark.job_runner import run_job

main = RECLAIM.main


def build_parser() -> argparse.ArgumentParser:
    return RECLAIM.script_parser(__doc__)


if __name__ == "__main__":
    run_job(main, build_parser(), app_name=RECLAIM.app_name)
