"""Parallel, resumable bulk ingest: every file of a tree stored by Spark executors.

The driver lists the source (:mod:`casstor_ops.store.trees.source_listing`) and
the shared runner (:mod:`casstor_ops.spark.bulk_tasks`) packs the files
into tasks; each task holds one :class:`~casstor_ops.store.coordination.leases.WriterLease`
(so a reclaim window waits for it, and it refuses to start inside one) and
stores its files with ``Store.put(..., lease=lease)``, so each head write is fenced by that lease.

* **Resumable, idempotent**: a file already committed unchanged is
  ``skipped`` (the rule of :func:`~casstor_ops.store.bulk.tree_files.store_unless_unchanged`,
  which ``casstor store DIR PREFIX`` follows too). Chunking and hashing run
  at ~0.6 GB/s a core, faster than storing (an existence check per block)
  and write nothing.
* **Result rows**: :data:`INGEST_SCHEMA`, the common columns plus
  ``new_blocks``, ``new_bytes`` (what the store did not hold yet) and
  ``new_stored_bytes`` (those bytes as stored, after compression);
  ``status`` ``stored``, ``skipped`` or ``failed``; a symlink to a file,
  not followed, is ``skipped`` with the reason in ``error``.

Example::

    >>> results = ingest(spark, "/data/photos", prefix="photos/")       # doctest: +SKIP
    >>> results.groupBy("status").count().show()                       # doctest: +SKIP

Failures: a file that vanished, cannot be read, is no longer a regular
file (a FIFO, socket or device put in its place after the listing is
refused, never read: it would block), is larger than ``max_file_bytes`` or
fails in the store, and a directory of the source that cannot be listed,
get a ``failed`` row with a one-line error, and the others go on
(:func:`casstor_ops.spark.bulk_report.exit_code` makes that
:data:`~casstor_ops.errors.EXIT_PARTIAL`). A ``prefix`` that makes invalid
IDs (``/abs/``, ``data//``; exit 2), a source that does not exist or holds
no files, an uninitialised store or an unreachable cluster raise
:class:`~casstor_ops.errors.CasstorError` before any task starts; the
cluster becoming unreachable mid-job ends it with one (see
:mod:`casstor_ops.spark.bulk_tasks`), and a re-run resumes.
"""

from __future__ import annotations

import os
from functools import partial
from operator import attrgetter
from typing import Any, Callable, Sequence

from fsspec.spec import AbstractFileSystem
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env
from casstor_ops.spark.bulk_tasks import BulkJob, driver_store, result_schema, run_bulk
from casstor_ops.spark.job_progress import JobProgress
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.trees.locations import is_url, resolve
from casstor_ops.store.trees.path_ids import path_to_id
from casstor_ops.store.trees.source_listing import SourceFile, list_source
from casstor_ops.store.bulk.tree_files import check_prefix, store_unless_unchanged

INGEST_SCHEMA = result_schema(T.StructField("new_blocks", T.LongType(), False),
                              T.StructField("new_bytes", T.LongType(), False),
                              T.StructField("new_stored_bytes", T.LongType(), False))


def _describe(entry: SourceFile) -> dict[str, Any]:
    # The path column is text for Spark: an undecodable name is shown escaped as in its ID.
    return dict(id=entry.file_id, path=path_to_id(entry.path), bytes=max(entry.size, 0))


def _writer_lease(store: Store) -> WriterLease:
    return WriterLease(store.session, "ingest")


def ingest_job(max_file_bytes: int | None = None, fs: AbstractFileSystem | None = None,
               follow_symlinks: bool = False) -> BulkJob[SourceFile]:
    """The ingest as a :class:`~casstor_ops.spark.bulk_tasks.BulkJob` over listed :class:`SourceFile` entries
    (local paths, or URLs on ``fs``); a local path that is a symlink is opened only if ``follow_symlinks``.

    Example::

        >>> run_bulk(spark, ingest_job(), list_source("data/"), endpoint_from_env())  # doctest: +SKIP

    Failures: see the module docstring.
    """
    return BulkJob("ingest", INGEST_SCHEMA, size=attrgetter("size"), describe=_describe,
                   work=partial(store_unless_unchanged, max_file_bytes=max_file_bytes, fs=fs,
                                follow_symlinks=follow_symlinks),
                   task_scope=_writer_lease)


def ingest(spark: SparkSession, source: str | os.PathLike | Sequence[str | os.PathLike], prefix: str = "",
           parallelism: int | None = None, max_file_bytes: int | None = None, root: str | None = None,
           endpoint: Endpoint | None = None, progress: Callable[[JobProgress], None] | None = None,
           follow_symlinks: bool = False, storage_options: dict[str, object] | None = None) -> DataFrame:
    """Store every file of ``source`` as ``prefix`` + its relative path; per-file results.

    ``source``: a directory, a glob or a list of paths, readable at the same
    path on every executor (see :mod:`casstor_ops.store.trees.source_listing`), or
    the URL of a directory, file or glob on any fsspec filesystem, read by the
    executors through it with ``storage_options`` (see
    :mod:`casstor_ops.store.trees.locations`).
    ``parallelism``: the number of tasks (default 2 per core).
    ``follow_symlinks``: enter symlinked directories below the source root
    (never twice the same directory) and read symlinks to files; without it
    a symlink to a file is a ``skipped`` row whose ``error`` says
    ``symlink, not followed``, and a file swapped for a link after the
    listing fails (opened with ``O_NOFOLLOW``). Returns a DataFrame with
    :data:`INGEST_SCHEMA` (one row per file, ``status`` ``stored``,
    ``skipped`` or ``failed``).

    Example::

        >>> ingest(spark, "data/", prefix="data/").where("status = 'failed'").count()  # doctest: +SKIP
        0

    Failures: see the module docstring.
    """
    endpoint = endpoint or endpoint_from_env()
    location = resolve(source, storage_options) if is_url(source) else None
    files = list_source(location or source, check_prefix(prefix), root, follow_symlinks)
    driver_store(endpoint)
    job = ingest_job(max_file_bytes, location.fs if location else None, follow_symlinks)
    return run_bulk(spark, job, files, endpoint, parallelism, progress)
