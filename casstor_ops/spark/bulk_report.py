"""The end of a bulk job: totals, failed files, a JSON report and the exit status.

Shared by ``jobs/ingest.py`` and ``jobs/restore.py`` (and the notebook),
which get a per-file results DataFrame from
:mod:`casstor_ops.spark.bulk_ingest` and
:mod:`casstor_ops.spark.bulk_restore` (rows of :func:`casstor_ops.spark.bulk_tasks.result_schema`).

Example::

    >>> code = finish(results, "ingest", "ingest.json")   # doctest: +SKIP
    ingest: 120 files, 1234.5 MB: 100 stored, 20 skipped, 0 failed; 3.2 MB new in 10 new blocks

Failed files are listed one ``casstor: <id>: <error>`` line each (the first
:data:`MAX_ERRORS_SHOWN`; then files skipped for a reason, a symlink not
followed, as ``casstor: skipped: <id>: <reason>``: reported, but exit 0 as
for an unchanged file), except when every listed file was missing on the
executors: that is the source not being where the executors look (not
mounted there, or removed since the listing), said in one line.

Failures: a report file that cannot be written raises
:class:`~casstor_ops.errors.CasstorError` (after the summary is printed).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from casstor_ops.errors import CasstorError
from casstor_ops.store.bulk.tree_files import (CORRUPT, FAILED, INGEST_STATUSES, NEW_COUNTS, RESTORE_STATUSES, SKIPPED,
                                          VANISHED, exit_status, summary_line)

MAX_ERRORS_SHOWN = 20


def totals(results: DataFrame) -> dict[str, Any]:
    """Files and bytes, the count of each status (zeros included) and, for an ingest, the new blocks and bytes
    (:data:`~casstor_ops.store.bulk.tree_files.NEW_COUNTS`)."""
    ingest = "new_blocks" in results.columns
    sums = [F.sum(c).alias(c) for c in ("bytes", *NEW_COUNTS) if c in results.columns]
    by_status = {r.status: r.asDict() for r in results.groupBy("status").agg(F.count("*").alias("files"), *sums)
                 .collect()}
    out: dict[str, Any] = {"files": sum(s["files"] for s in by_status.values()),
                           "bytes": sum(s["bytes"] or 0 for s in by_status.values())}
    for status in (INGEST_STATUSES if ingest else RESTORE_STATUSES):
        out[status] = by_status.get(status, {}).get("files", 0)
    if ingest:
        for column in NEW_COUNTS:
            out[column] = sum(s[column] or 0 for s in by_status.values())
    return out


def exit_code(results: DataFrame) -> int:
    """0 when every file succeeded; EXIT_CORRUPT if a restore met corruption, else EXIT_PARTIAL."""
    return exit_status({row.status for row in results.select("status").distinct().collect()})


def _print_skipped(results: DataFrame) -> None:
    """One line per file skipped for a reason (a symlink, not followed), the first :data:`MAX_ERRORS_SHOWN`."""
    skipped = results.where((F.col("status") == SKIPPED) & F.col("error").isNotNull()).orderBy("id")
    shown = skipped.limit(MAX_ERRORS_SHOWN + 1).collect()
    for row in shown[:MAX_ERRORS_SHOWN]:
        print(f"casstor: skipped: {row.id}: {row.error}", file=sys.stderr)
    if len(shown) > MAX_ERRORS_SHOWN:
        print("casstor: ... and more skipped files (see --report)", file=sys.stderr)


def finish(results: DataFrame, what: str, report_path: str | None = None) -> int:
    """Print the summary (stdout) and the failures (stderr), write the report; the exit status."""
    summary = totals(results)
    print(summary_line(what, summary))
    failed = results.where(F.col("status").isin(FAILED, CORRUPT)).orderBy("id")
    if summary.get(FAILED) == summary["files"] and failed.where(F.col("error") != VANISHED).isEmpty():
        print(f"casstor: {what}: none of the {summary['files']} listed files exists where the executors look "
              f"({VANISHED}): the source must be at the same path on the driver and on every executor (a shared "
              f"mount), or be a URL they can all read (s3://…, hdfs://…; see docs/spark.md)", file=sys.stderr)
    else:
        for row in failed.limit(MAX_ERRORS_SHOWN).collect():
            print(f"casstor: {row.id}: {row.error}", file=sys.stderr)
        if summary.get(FAILED, 0) + summary.get(CORRUPT, 0) > MAX_ERRORS_SHOWN:
            print("casstor: ... and more failed files (see --report)", file=sys.stderr)
    _print_skipped(results)
    if report_path:
        report = {"summary": summary, "files": [r.asDict() for r in results.orderBy("id").collect()]}
        try:
            with open(report_path, "w") as out:
                json.dump(report, out, indent=1)
        except OSError as err:
            raise CasstorError(f"cannot write the report {report_path!r}: {err.strerror}") from None
    return exit_code(results)
