"""Parallel verified bulk restore: every file under a prefix (or a list of ids) restored by Spark executors.

The driver lists the ids with their sizes and the shared runner
(:mod:`casstor_ops.spark.bulk_tasks`) packs them into tasks; each
executor restores its files to ``dest_dir/<id>`` (an id with escaped
undecodable bytes back to the same bytes:
:func:`~casstor_ops.store.trees.path_ids.id_to_path`) with
:meth:`~casstor_ops.store.api.Store.restore` (written aside, every block
and the file hash checked, then moved into place), exactly as
``casstor restore``. Result rows: :data:`RESTORE_SCHEMA`, the common
columns (``path`` is the restored file), ``status`` ``restored``,
``failed`` or ``corrupt``.

Example::

    >>> restore_many(spark, "photos/", "/restore").where("status != 'restored'").count()  # doctest: +SKIP
    0

Failures: a file that exists in ``dest_dir`` (unless ``force``), cannot be
written, is unknown or has an id that is not a safe relative path gets a
``failed`` row; one whose blocks are missing or damaged gets ``corrupt``
(:func:`casstor_ops.spark.bulk_report.exit_code` makes that
:data:`~casstor_ops.errors.EXIT_CORRUPT`); the others go on. A prefix that
names no file, an empty list of ids, a ``dest_dir`` that is a file, an
uninitialised store or an unreachable cluster raise
:class:`~casstor_ops.errors.CasstorError` before any task starts.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Sequence

from fsspec.spec import AbstractFileSystem
from pyspark.sql import DataFrame, SparkSession

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env
from casstor_ops.errors import CasstorError
from casstor_ops.spark.bulk_tasks import BulkJob, driver_store, result_schema, run_bulk
from casstor_ops.spark.job_progress import JobProgress
from casstor_ops.store.api import Store
from casstor_ops.store.trees.locations import Location, is_url, make_directory, resolve
from casstor_ops.store.bulk.tree_files import files_to_restore, restore_below

RESTORE_SCHEMA = result_schema()


def _describe(item: tuple[str, int, uuid.UUID | None]) -> dict[str, Any]:
    return dict(id=item[0], path="")  # the target is known once the id is checked, on the executor


def _restore_file(dest_dir: str, force: bool, fs: AbstractFileSystem | None, at: datetime | None, store: Store,
                  item: tuple[str, int, uuid.UUID | None], row: dict[str, Any], _scope: None) -> None:
    restore_below(store, dest_dir, item[0], row, force, fs=fs, version=item[2], at=at)


def _destination(dest_dir: str | os.PathLike, storage_options: dict[str, object] | None) -> Location | Path:
    """The destination directory: a URL's location, or a local path that is not a file."""
    if is_url(dest_dir):
        return resolve(str(dest_dir), storage_options)
    dest = Path(dest_dir).absolute()
    if dest.exists() and not dest.is_dir():
        raise CasstorError(f"{str(dest)!r} exists and is not a directory")
    return dest


def restore_many(spark: SparkSession, prefix_or_ids: str | Sequence[str], dest_dir: str | os.PathLike,
                 force: bool = False, parallelism: int | None = None, endpoint: Endpoint | None = None,
                 progress: Callable[[JobProgress], None] | None = None,
                 storage_options: dict[str, object] | None = None, at: datetime | None = None) -> DataFrame:
    """Restore every file under a prefix (or the listed ids) to ``dest_dir/<id>``, verified; ``at``: as they were
    then (the driver finds each file's version then, the executors restore exactly that version).

    Refuses to overwrite an existing file unless ``force``, as ``casstor
    restore``. ``parallelism``: the number of tasks (default 2 per core).
    ``dest_dir``: a local directory, or the URL of one on any fsspec
    filesystem, written by the executors through it with ``storage_options``
    (see :mod:`casstor_ops.store.trees.locations`).
    Returns a DataFrame with :data:`RESTORE_SCHEMA`, one row per file.

    Example::

        >>> restore_many(spark, ["photos/a.jpg", "photos/b.jpg"], "/restore", force=True)  # doctest: +SKIP
        DataFrame[id: string, path: string, bytes: bigint, blocks: bigint, seconds: double, status: string, error: string]

    Failures: see the module docstring.
    """
    endpoint = endpoint or endpoint_from_env()
    dest = _destination(dest_dir, storage_options)
    files = files_to_restore(driver_store(endpoint), prefix_or_ids, at)
    if isinstance(dest, Location):
        make_directory(dest)
        work = partial(_restore_file, dest.path, force, dest.fs, at)
    else:
        dest.mkdir(parents=True, exist_ok=True)
        work = partial(_restore_file, str(dest), force, None, at)
    job = BulkJob("restore", RESTORE_SCHEMA, size=itemgetter(1), describe=_describe, work=work)
    return run_bulk(spark, job, files, endpoint, parallelism, progress)
