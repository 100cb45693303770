"""Parallel, resumable bulk ingest and restore through Spark executors.

The driver only lists (sizes, ids) and splits the work; executors open the
files and run the very same :class:`~casstor_ops.store.Store` code as
``casstor store``/``casstor restore``, so file bytes never travel through
the driver and there is one implementation of the commit protocol.

* **Work split**: files are packed into tasks by size, largest first, each
  into the task with the fewest bytes so far (greedy LPT bin-packing), so
  no task gets all the big files; two tasks per core, so progress
  (reported at task granularity) moves and a straggler is short, while
  the per-task cost (a writer lease: an insert, a SERIAL read and a
  delete) stays small.
* **Sessions**: each Python worker keeps one Store (one Cassandra session)
  for all its tasks (:mod:`casstor_ops.executor_store`); each ingest task
  holds one :class:`~casstor_ops.maintenance.WriterLease` and stores with
  ``lease=False`` inside it.
* **Resumable, idempotent**: a file whose id is already committed with the
  same size and the same content hash is ``skipped`` (read and hashed, but
  no block, block list or head is written). The file hash is the one
  the head row records anyway (BLAKE2b of the block hashes); a cheaper
  fingerprint (size + mtime) is not an option because the store keeps no
  mtime, and mtime does not survive copies. Chunking and hashing run at
  ~0.6 GB/s a core, faster than storing (an existence check per block)
  and write nothing.
* **Failures**: a file that vanished, cannot be read, is larger than
  ``max_file_bytes`` or fails in the store is recorded with ``status``
  ``failed`` and its error, and the others go on; :func:`casstor_ops.bulk_report.exit_code` turns
  the results into :data:`~casstor_ops.errors.EXIT_PARTIAL` (or
  :data:`~casstor_ops.errors.EXIT_CORRUPT` for a corrupt restore).

Example::

    >>> results = ingest(spark, "/data/photos", prefix="photos/")       # doctest: +SKIP
    >>> results.groupBy("status").count().show()                       # doctest: +SKIP
    >>> restore_many(spark, "photos/", "/restore")                      # doctest: +SKIP

Failures of the whole job (a source that does not exist or holds no
files, a prefix that names no file, an uninitialised store or an
unreachable cluster) raise :class:`~casstor_ops.errors.CasstorError`
before any task starts.
"""

from __future__ import annotations

import heapq
import os
import time
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from cassandra import DriverException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from .bulk_report import CORRUPT, FAILED, RESTORED, SKIPPED, STORED
from .connection import Endpoint, endpoint_from_env, ensure_running
from .errors import CasstorError, CorruptionError
from .executor_store import store_for
from .job_progress import Progress, ProgressMonitor
from .maintenance import WriterLease
from .source_listing import UNKNOWN_SIZE, SourceFile, list_source
from .store import FileInfo, Store
from .upload import source_file_hash

TASKS_PER_CORE = 2
# Errors that belong to one file; anything else is a bug and fails the job with its traceback.
_FILE_ERRORS = (CasstorError, OSError, DriverException)

INGEST_SCHEMA = T.StructType([
    T.StructField("id", T.StringType(), False),
    T.StructField("path", T.StringType(), False),
    T.StructField("bytes", T.LongType(), False),
    T.StructField("blocks", T.LongType(), False),
    T.StructField("new_blocks", T.LongType(), False),
    T.StructField("new_bytes", T.LongType(), False),
    T.StructField("seconds", T.DoubleType(), False),
    T.StructField("status", T.StringType(), False),
    T.StructField("error", T.StringType(), True),
])

RESTORE_SCHEMA = T.StructType([
    T.StructField("id", T.StringType(), False),
    T.StructField("path", T.StringType(), False),
    T.StructField("bytes", T.LongType(), False),
    T.StructField("blocks", T.LongType(), False),
    T.StructField("seconds", T.DoubleType(), False),
    T.StructField("status", T.StringType(), False),
    T.StructField("error", T.StringType(), True),
])

Item = TypeVar("Item")


def pack_by_size(items: Iterable[Item], bins: int, size: Callable[[Item], int]) -> list[list[Item]]:
    """Greedy LPT bin-packing: largest first, each into the bin with the fewest bytes so far.

    Example::

        >>> pack_by_size([5, 1, 4, 2, 3], 2, size=lambda x: x)
        [[5, 2, 1], [4, 3]]

    Empty bins are dropped; the largest bin is at most 4/3 of the optimum.
    """
    heap = [(0, index) for index in range(max(1, bins))]
    packed: list[list[Item]] = [[] for _ in heap]
    for item in sorted(items, key=size, reverse=True):
        total, index = heapq.heappop(heap)
        packed[index].append(item)
        heapq.heappush(heap, (total + max(0, size(item)), index))
    return [b for b in packed if b]


def _task_count(spark: SparkSession, items: int, parallelism: int | None) -> int:
    return max(1, min(items, parallelism or TASKS_PER_CORE * spark.sparkContext.defaultParallelism))


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return " ".join(str(err).split()) or type(err).__name__


def _head(store: Store, file_id: str) -> FileInfo | None:
    try:
        return store.stat(file_id)
    except CasstorError:  # not committed yet
        return None


def _ingest_row(entry: SourceFile) -> dict:
    return dict(id=entry.file_id, path=entry.path, bytes=max(entry.size, 0), blocks=0, new_blocks=0, new_bytes=0,
                seconds=0.0, status=FAILED, error=None)


def _ingest_file(store: Store, entry: SourceFile, max_file_bytes: int | None) -> dict:
    """Store one file unless it is already committed unchanged; never raises for a file's own errors."""
    started = time.monotonic()
    row = _ingest_row(entry)
    try:
        size = row["bytes"] = os.stat(entry.path).st_size
        if max_file_bytes is not None and size > max_file_bytes:
            raise CasstorError(f"{size} bytes: larger than the limit of {max_file_bytes} bytes")
        head = _head(store, entry.file_id)
        if head is not None and head.size == size and source_file_hash(entry.path, store.settings) == head.hash:
            row.update(blocks=head.blocks, status=SKIPPED)
        else:
            result = store.put(entry.path, entry.file_id, lease=False)
            row.update(bytes=result.bytes, blocks=result.blocks, new_blocks=result.new_blocks,
                       new_bytes=result.new_bytes, status=STORED)
    except FileNotFoundError:
        row["error"] = "no such file" + (" (vanished since the listing)" if entry.size != UNKNOWN_SIZE else "")
    except _FILE_ERRORS as err:
        row["error"] = _one_line(err)
    row["seconds"] = time.monotonic() - started
    return row


def _ingest_task(endpoint: Endpoint, max_file_bytes: int | None, files_done, bytes_done):
    def run(bins: Iterator[list[SourceFile]]) -> Iterator[dict]:
        entries = [entry for b in bins for entry in b]
        rows = []
        try:
            store = store_for(endpoint)
            with WriterLease(store.session, "ingest"):
                for entry in entries:
                    rows.append(_ingest_file(store, entry, max_file_bytes))
                    files_done.add(1)
                    bytes_done.add(max(entry.size, 0))
        except (CasstorError, DriverException) as err:  # no lease (a reclaim window) or no cluster
            rows += [{**_ingest_row(entry), "error": _one_line(err)} for entry in entries[len(rows):]]
        yield from rows

    return run


def _driver_store(endpoint: Endpoint) -> Store:
    """The driver's store: checks the store before any task starts (one error, not one per task)."""
    ensure_running(endpoint)
    return store_for(endpoint)


def _run_bins(spark: SparkSession, bins: list[list], make_task: Callable, totals: tuple[int, int],
              progress: Callable[[Progress], None] | None, schema: T.StructType, description: str) -> DataFrame:
    """Run one task per bin (``make_task(files_done, bytes_done)`` with the progress
    accumulators), reporting progress; the collected rows as a DataFrame."""
    sc = spark.sparkContext
    sc.setJobDescription(description)
    try:
        with ProgressMonitor(spark, *totals, progress) as monitor:
            rows = sc.parallelize(bins, len(bins)).mapPartitions(make_task(monitor.files, monitor.bytes)).collect()
    finally:
        sc.setJobDescription(None)
    # Collected once and re-created: the results are small, and a lazy DataFrame
    # would run the whole ingest again for every action on it.
    return spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in rows], schema)


def ingest(spark: SparkSession, source: str | os.PathLike | Sequence[str | os.PathLike], prefix: str = "",
           parallelism: int | None = None, max_file_bytes: int | None = None, root: str | None = None,
           endpoint: Endpoint | None = None, progress: Callable[[Progress], None] | None = None) -> DataFrame:
    """Store every file of ``source`` as ``prefix`` + its relative path; per-file results.

    ``source``: a directory, a glob or a list of paths, readable at the same
    path on every executor (see :mod:`casstor_ops.source_listing`).
    ``parallelism``: the number of tasks (default 2 per core). Returns a
    DataFrame with :data:`INGEST_SCHEMA` (one row per file, ``status``
    ``stored``, ``skipped`` or ``failed``).

    Example::

        >>> ingest(spark, "data/", prefix="data/").where("status = 'failed'").count()  # doctest: +SKIP
        0
    """
    endpoint = endpoint or endpoint_from_env()
    files = list_source(source, prefix, root)
    _driver_store(endpoint)
    bins = pack_by_size(files, _task_count(spark, len(files), parallelism), size=lambda f: f.size)
    return _run_bins(spark, bins, partial(_ingest_task, endpoint, max_file_bytes),
                     (len(files), sum(max(f.size, 0) for f in files)), progress, INGEST_SCHEMA,
                     f"casstor ingest of {len(files)} files")


def _restore_target(dest_dir: str, file_id: str) -> str:
    """``dest_dir/<id>``; ids that would escape ``dest_dir`` are refused."""
    parts = PurePosixPath(file_id).parts
    if not parts or file_id.startswith("/") or any(p in ("..", ".") for p in parts):
        raise CasstorError(f"id {file_id!r} is not a relative path: refusing to restore it outside {dest_dir}")
    return os.path.join(dest_dir, *parts)


def _restore_row(file_id: str) -> dict:
    return dict(id=file_id, path="", bytes=0, blocks=0, seconds=0.0, status=FAILED, error=None)


def _restore_file(store: Store, file_id: str, dest_dir: str, force: bool) -> dict:
    started = time.monotonic()
    row = _restore_row(file_id)
    try:
        target = row["path"] = _restore_target(dest_dir, file_id)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        result = store.restore(file_id, target, force=force)
        row.update(bytes=result.bytes, blocks=result.blocks, status=RESTORED)
    except CorruptionError as err:
        row.update(status=CORRUPT, error=_one_line(err))
    except _FILE_ERRORS as err:
        row["error"] = _one_line(err)
    row["seconds"] = time.monotonic() - started
    return row


def _restore_task(endpoint: Endpoint, dest_dir: str, force: bool, files_done, bytes_done):
    def run(bins: Iterator[list[tuple[str, int]]]) -> Iterator[dict]:
        entries = [entry for b in bins for entry in b]
        rows = []
        try:
            store = store_for(endpoint)
            for file_id, size in entries:
                rows.append(_restore_file(store, file_id, dest_dir, force))
                files_done.add(1)
                bytes_done.add(max(size, 0))
        except (CasstorError, DriverException) as err:  # no cluster: every file fails alike
            rows += [{**_restore_row(file_id), "error": _one_line(err)} for file_id, _ in entries[len(rows):]]
        yield from rows

    return run


def _restore_list(store: Store, prefix_or_ids: str | Sequence[str]) -> list[tuple[str, int]]:
    if isinstance(prefix_or_ids, str):
        found = [(info.id, info.size) for info in store.list(prefix_or_ids)]
        if not found:
            raise CasstorError(f"no file in the store has an id starting with {prefix_or_ids!r}")
        return found
    if not prefix_or_ids:
        raise CasstorError("the list of ids to restore is empty")
    listed = []
    for file_id in dict.fromkeys(prefix_or_ids):
        try:
            listed.append((file_id, store.stat(file_id).size))
        except CasstorError:  # unknown: the task reports it with the store's own message
            listed.append((file_id, 0))
    return listed


def restore_many(spark: SparkSession, prefix_or_ids: str | Sequence[str], dest_dir: str | os.PathLike,
                 force: bool = False, parallelism: int | None = None, endpoint: Endpoint | None = None,
                 progress: Callable[[Progress], None] | None = None) -> DataFrame:
    """Restore every file under a prefix (or the listed ids) to ``dest_dir/<id>``, verified.

    Each file is restored by :meth:`Store.restore` on an executor (written
    aside, hash-checked, then moved into place), refusing to overwrite an
    existing file unless ``force``, exactly as ``casstor restore``. Returns
    a DataFrame with :data:`RESTORE_SCHEMA` (``status`` ``restored``,
    ``failed`` or ``corrupt``).

    Example::

        >>> restore_many(spark, "photos/", "/restore").where("status != 'restored'").count()  # doctest: +SKIP
        0
    """
    endpoint = endpoint or endpoint_from_env()
    dest = Path(dest_dir).absolute()
    if dest.exists() and not dest.is_dir():
        raise CasstorError(f"{str(dest)!r} exists and is not a directory")
    files = _restore_list(_driver_store(endpoint), prefix_or_ids)
    dest.mkdir(parents=True, exist_ok=True)
    bins = pack_by_size(files, _task_count(spark, len(files), parallelism), size=lambda f: f[1])
    return _run_bins(spark, bins, partial(_restore_task, endpoint, str(dest), force),
                     (len(files), sum(size for _, size in files)), progress, RESTORE_SCHEMA,
                     f"casstor restore of {len(files)} files")
