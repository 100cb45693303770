"""Spark's Python workers on Python 3.10 and 3.11: a task's cache invalidation without re-reading every zip.

PySpark's worker calls ``importlib.invalidate_caches()`` before every task (``pyspark/worker.py``, Spark 3.5).
On Python 3.10 and 3.11 that makes each ``zipimporter`` on ``sys.path`` read its archive's whole directory
again, in pure Python (CPython gh-103200; 3.12 made it lazy). A worker's path holds ``pyspark.zip`` (793
files), py4j's zip and spark-core's jar (thousands of classes), so every task paid for reading them. Measured
on this project's 2-core machine (2026-12-02): 400 no-op tasks on ``local[2]`` took 31-36 s, and 10-11 s
without those reads, ~60 ms a task; py-spy put ~40 % of a cold ``casstor verify``'s Python worker samples in
them.

:func:`reread_changed_archives_only` makes a zipimporter read its archive again only when the archive's size or
modification time changed since it last read it: a changed archive is still seen (what the call is for), an
unchanged one costs a ``stat``. ``casstor_ops/__init__.py`` applies it when casstor is imported in a Spark
Python worker (the first casstor task of each worker), so that worker's later tasks gain; no other process
changes.

Example::

    >>> reread_changed_archives_only()   # doctest: +SKIP  (done by the first casstor import in a worker)

Never raises: where the interpreter's zipimporter reads lazily already (3.12+), or is not running under a
PySpark worker, it changes nothing.
"""

from __future__ import annotations

import os
import sys
import zipimport

_MARK = "_casstor_rereads_changed_only"  # on the replacement method: applied already
_READ = "_casstor_archive_read"  # on a zipimporter: its archive's (mtime, size) when it last read it


def reread_changed_archives_only() -> bool:
    """Make ``zipimporter.invalidate_caches`` skip archives unchanged since their last read, in a PySpark worker
    on Python 3.10 or 3.11; True when it did (now or before)."""
    original = getattr(zipimport.zipimporter, "invalidate_caches", None)
    if getattr(original, _MARK, False):
        return True
    if original is None or not (3, 10) <= sys.version_info[:2] < (3, 12) or "pyspark.worker" not in sys.modules:
        return False

    def invalidate_caches(self: zipimport.zipimporter) -> None:
        signature = _signature(self.archive)
        if signature is None or signature != getattr(self, _READ, None):
            original(self)
            setattr(self, _READ, signature)

    setattr(invalidate_caches, _MARK, True)
    zipimport.zipimporter.invalidate_caches = invalidate_caches
    return True


def _signature(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None  # gone or unreadable: the original call decides, as it would have
    return status.st_mtime_ns, status.st_size
