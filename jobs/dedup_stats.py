"""``spark-submit jobs/dedup_stats.py [--out plots/] [--depth N]``: the dedup report as text, JSON, CSV, PNG and HTML.

Totals (files, logical, unique and stored bytes, garbage, missing), what
removing each prefix at depth N would free (exclusive bytes, raw and as
stored, beside shared and logical bytes), the reference-count classes and
what each saved, the growth of the live data by commit time and the new
bytes per top-level prefix, block sizes, the most shared blocks and the
largest files: computed in Spark from the light tables (sums as 64-bit
integers). The summary goes to stdout; ``dedup_stats.json``, one CSV per
table, the PNG figures and ``dedup_report.html`` (self-contained) go to
``--out``. ``docs/dedup_report.md`` defines every figure.

The same job with the same flags and exit statuses, in-process on a local master
(or ``--master URL``): ``casstor report`` (:mod:`casstor_ops.cli.cmd_maintenance`).

Example::

    $ .venv/bin/spark-submit jobs/dedup_stats.py --out plots/ --depth 2 --top 10
"""

from __future__ import annotations

import argparse

from casstor_ops.cli.cmd_maintenance import REPORT
from casstor_ops.spark.job_runner import run_job

main = REPORT.main


def build_parser() -> argparse.ArgumentParser:
    return REPORT.script_parser(__doc__)


if __name__ == "__main__":
    run_job(main, build_parser(), app_name=REPORT.app_name)
