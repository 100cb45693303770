"""Parallel, resumable bulk ingest: every file of a tree stored by Spark executors.

The driver lists the source (:mod:`casstor_ops.spark.source_listing`) and
the shared runner (:mod:`casstor_ops.spark.bulk_tasks`) packs the files
into tasks; each task holds one :class:`~casstor_ops.store.leases.WriterLease`
(so a reclaim window waits for it, and it refuses to start inside one) and
stores its files with ``Store.put(..., lease=lease)``, so each head write is fenced by that lease.

* **Resumable, idempotent**: a file whose id is already committed with the
  same size, mode, mtime and content hash is ``skipped`` (read and hashed,
  but no block, block list or head is written). The file hash is the one the
  head row records anyway (BLAKE2b of the block hashes); size + mtime alone
  is not trusted as a fingerprint, since mtime does not survive all copies
  and can be set back. Chunking and hashing run at
  ~0.6 GB/s a core, faster than storing (an existence check per block)
  and write nothing.
* **Result rows**: :data:`INGEST_SCHEMA`, the common columns plus
  ``new_blocks`` and ``new_bytes`` (what the store did not hold yet);
  ``status`` ``stored``, ``skipped`` or ``failed``.

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

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env
from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.spark.bulk_report import SKIPPED, STORED
from casstor_ops.spark.bulk_tasks import BulkJob, driver_store, result_schema, run_bulk
from casstor_ops.spark.job_progress import JobProgress
from casstor_ops.spark.path_ids import path_to_id
from casstor_ops.spark.source_listing import UNKNOWN_SIZE, SourceFile, list_source
from casstor_ops.store.api import FileInfo, Store, check_id, open_source
from casstor_ops.store.leases import WriterLease
from casstor_ops.store.upload import source_file_hash

INGEST_SCHEMA = result_schema(T.StructField("new_blocks", T.LongType(), False),
                              T.StructField("new_bytes", T.LongType(), False))


def _head(store: Store, file_id: str) -> FileInfo | None:
    try:
        return store.stat(file_id)
    except CasstorError:  # not committed yet
        return None


def check_prefix(prefix: str) -> str:
    """``prefix`` if the IDs it starts are valid by the store's own rules (``check_id``); else one line, exit 2.

    Example::

        >>> check_prefix("photos/")
        'photos/'
        >>> check_prefix("/abs/")                                         # doctest: +SKIP
        CasstorError: --prefix '/abs/' cannot start a file ID: file ID '/abs/x': empty, '.' and '..' ...

    Checked before any Spark work, so a bad prefix is one error, not one failed row per file.
    """
    try:
        check_id(path_to_id(prefix) + "x", storing=True)  # "x": any valid name that could follow it
    except CasstorError as err:
        raise CasstorError(f"--prefix {prefix!r} cannot start a file ID: {err}", EXIT_USAGE) from None
    return prefix


def _describe(entry: SourceFile) -> dict[str, Any]:
    # The path column is text for Spark: an undecodable name is shown escaped as in its ID.
    return dict(id=entry.file_id, path=path_to_id(entry.path), bytes=max(entry.size, 0))


def _store_file(max_file_bytes: int | None, store: Store, entry: SourceFile, row: dict[str, Any],
                lease: WriterLease) -> None:
    """Store one file unless it is already committed unchanged; the task's ``lease`` fences its head write."""
    if entry.error:
        raise CasstorError(entry.error)
    try:
        size = row["bytes"] = os.stat(entry.path).st_size
        if max_file_bytes is not None and size > max_file_bytes:
            raise CasstorError(f"{size} bytes: larger than the limit of {max_file_bytes} bytes")
        # Opened as a store opens it, so a FIFO swapped in after the listing is refused here instead of
        # blocking the task; a chmod or touch alone is a change too: the head must carry the source's mode and mtime.
        with open_source(entry.path) as (reader, attributes):
            head = _head(store, entry.file_id)
            if head is not None and head.size == size and head.attributes == attributes \
                    and source_file_hash(reader, store.settings) == head.hash:
                row.update(blocks=head.blocks, status=SKIPPED)
                return
        result = store.put(entry.path, entry.file_id, lease=lease)
        row.update(bytes=result.bytes, blocks=result.blocks, new_blocks=result.new_blocks,
                   new_bytes=result.new_bytes, status=STORED)
    except FileNotFoundError:
        # A listed size means the file existed when the driver looked; an explicit path may never have.
        raise CasstorError("no such file" + (" (vanished since the listing)" if entry.size != UNKNOWN_SIZE
                                             else "")) from None


def _writer_lease(store: Store) -> WriterLease:
    return WriterLease(store.session, "ingest")


def ingest_job(max_file_bytes: int | None = None) -> BulkJob[SourceFile]:
    """The ingest as a :class:`~casstor_ops.spark.bulk_tasks.BulkJob` over listed :class:`SourceFile` entries.

    Example::

        >>> run_bulk(spark, ingest_job(), list_source("data/"), endpoint_from_env())  # doctest: +SKIP

    Failures: see the module docstring.
    """
    return BulkJob("ingest", INGEST_SCHEMA, size=attrgetter("size"), describe=_describe,
                   work=partial(_store_file, max_file_bytes), task_scope=_writer_lease)


def ingest(spark: SparkSession, source: str | os.PathLike | Sequence[str | os.PathLike], prefix: str = "",
           parallelism: int | None = None, max_file_bytes: int | None = None, root: str | None = None,
           endpoint: Endpoint | None = None, progress: Callable[[JobProgress], None] | None = None,
           follow_symlinks: bool = False) -> DataFrame:
    """Store every file of ``source`` as ``prefix`` + its relative path; per-file results.

    ``source``: a directory, a glob or a list of paths, readable at the same
    path on every executor (see :mod:`casstor_ops.spark.source_listing`).
    ``parallelism``: the number of tasks (default 2 per core).
    ``follow_symlinks``: enter symlinked directories below the source root
    (never twice the same directory). Returns a DataFrame with
    :data:`INGEST_SCHEMA` (one row per file, ``status`` ``stored``,
    ``skipped`` or ``failed``).

    Example::

        >>> ingest(spark, "data/", prefix="data/").where("status = 'failed'").count()  # doctest: +SKIP
        0

    Failures: see the module docstring.
    """
    endpoint = endpoint or endpoint_from_env()
    files = list_source(source, check_prefix(prefix), root, follow_symlinks)
    driver_store(endpoint)
    return run_bulk(spark, ingest_job(max_file_bytes), files, endpoint, parallelism, progress)
