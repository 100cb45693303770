"""Files and bytes done, MB/s and ETA of a Spark bulk job, seen from the driver.

Tasks add to two Spark accumulators (files done, bytes done) after each
file; Spark merges a task's additions into the driver's value when the
task finishes, so the driver sees progress at task granularity (the bulk
jobs split their work into several tasks per core for this reason). A
daemon thread polls the values while the job runs in the calling thread
(which keeps Ctrl-C working) and hands a :class:`JobProgress` to a callback.

Example::

    >>> with ProgressMonitor(spark, files_total=10, bytes_total=1 << 30,
    ...                      callback=lambda p: print(p.line("ingest"))) as monitor:  # doctest: +SKIP
    ...     rdd.mapPartitions(work(monitor.files, monitor.bytes)).collect()
    ingest: 4/10 files, 429.5/1073.7 MB, 85.9 MB/s, ETA 8 s

A callback that raises stops the reporting, never the job.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

from pyspark import Accumulator
from pyspark.sql import SparkSession

POLL_S = 1.0


@dataclass(frozen=True)
class JobProgress:
    """One snapshot of a bulk job, as a progress callback gets it (not the store's per-file byte callback)."""

    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    elapsed_s: float

    @property
    def mb_per_s(self) -> float:
        return self.bytes_done / 1e6 / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the average rate so far; None before any byte is done."""
        if self.bytes_done <= 0:
            return None
        return max(0.0, (self.bytes_total - self.bytes_done) * self.elapsed_s / self.bytes_done)

    def line(self, what: str) -> str:
        eta = "?" if self.eta_s is None else f"{self.eta_s:.0f} s"
        return (f"{what}: {self.files_done}/{self.files_total} files, {self.bytes_done / 1e6:.1f}/"
                f"{self.bytes_total / 1e6:.1f} MB, {self.mb_per_s:.1f} MB/s, ETA {eta}")


def print_progress(what: str) -> Callable[[JobProgress], None]:
    """A callback that prints each new state as one line on stderr (for jobs)."""
    last: list[tuple[int, int]] = []

    def show(progress: JobProgress) -> None:
        state = (progress.files_done, progress.bytes_done)
        if last and last[-1] == state:
            return
        last[:] = [state]
        print(progress.line(what), file=sys.stderr, flush=True)

    return show


class ProgressMonitor:
    """Accumulators for the tasks, and a thread reporting them (see the module docstring)."""

    def __init__(self, spark: SparkSession, files_total: int, bytes_total: int,
                 callback: Callable[[JobProgress], None] | None, poll_s: float = POLL_S) -> None:
        self.files: Accumulator = spark.sparkContext.accumulator(0)
        self.bytes: Accumulator = spark.sparkContext.accumulator(0)
        self._totals = (files_total, bytes_total)
        self._callback = callback
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0

    def snapshot(self) -> JobProgress:
        files_total, bytes_total = self._totals
        # A retried task adds again: never report more than the whole.
        return JobProgress(min(self.files.value, files_total), files_total, min(self.bytes.value, bytes_total),
                        bytes_total, time.monotonic() - self._started)

    def _report(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self._callback(self.snapshot())
            except Exception:  # a broken display must not break the job
                return

    def __enter__(self) -> "ProgressMonitor":
        self._started = time.monotonic()
        if self._callback is not None:
            self._thread = threading.Thread(target=self._report, name="casstor-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if exc[0] is None:
                with contextlib.suppress(Exception):  # as in _report: display only
                    self._callback(self.snapshot())
