"""The task runner of bulk ingest and bulk restore: bins of files on Spark executors, one result row each.

The driver only lists the items (with their sizes) and splits the work;
executors run the very same :class:`~casstor_ops.store.api.Store` code as
``casstor store``/``casstor restore``, so file bytes never travel through
the driver and there is one implementation of the commit protocol. A
:class:`BulkJob` says what one kind of job does with one item; everything
else lives here, once:

* **Work split** (:func:`pack_by_size`, :func:`task_count`): items are
  packed into tasks by size, largest first, each into the task with the
  fewest bytes so far (greedy LPT bin-packing), so no task gets all the
  big files; two tasks per core, so progress (reported at task
  granularity) moves and a straggler is short, while the per-task cost
  (an ingest's writer lease: an insert, a SERIAL read and a delete) stays
  small.
* **Sessions**: each Python worker keeps one Store (one Cassandra session)
  for all its tasks (:mod:`casstor_ops.spark.executor_store`); a job's
  ``task_scope`` (an ingest's :class:`~casstor_ops.store.coordination.leases.WriterLease`)
  is held once per task around all its items.
* **Progress**: files and bytes done go to the accumulators of a
  :class:`~casstor_ops.spark.job_progress.ProgressMonitor` after each item.
* **Result rows** (:func:`result_schema`): every job's rows have ``id``,
  ``path``, ``bytes``, ``blocks``, the job's own extra columns,
  ``seconds``, ``status`` and ``error``; :mod:`casstor_ops.spark.bulk_report`
  turns them into totals, a report and an exit status.

Example (what :func:`casstor_ops.spark.bulk_restore.restore_many` does)::

    >>> job = BulkJob("restore", result_schema(), size=itemgetter(1), describe=..., work=...)  # doctest: +SKIP
    >>> run_bulk(spark, job, [("a/x.bin", 1200), ("a/y.bin", 80)], endpoint)                  # doctest: +SKIP
    DataFrame[id: string, path: string, bytes: bigint, blocks: bigint, seconds: double, status: string, error: string]

Failures: an item's own failure (:data:`~casstor_ops.store.bulk.tree_files.FILE_ERRORS`: it vanished, cannot
be read or written, the store refused it, or a Cassandra request failed
after the store's own retries, e.g. ``NoHostAvailable``,
``ConnectionException``, ``ConnectionBusy``, ``OperationTimedOut``) never
stops the job: its row gets ``status`` ``failed`` (``corrupt`` for a
missing or damaged block) and a one-line ``error``, and the other items go
on. A task that cannot start (no cluster, no lease inside a reclaim
window) fails each of its remaining items alike. When every item of a task
failed because no Cassandra host could be reached, the cluster is down,
not the files: :func:`run_bulk` raises one
:class:`~casstor_ops.errors.CasstorError` (``EXIT_UNREACHABLE``) instead of
reporting them all as failed; what was committed stays, so an ingest
re-run resumes. Anything else is a bug: it fails the Spark job with its
traceback. The driver checks the store before any task starts
(:func:`driver_store`), so an unreachable cluster or an uninitialised
store is one :class:`~casstor_ops.errors.CasstorError`, not one per task.
"""

from __future__ import annotations

import contextlib
import heapq
import time
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Generic, Iterable, Iterator, NamedTuple, Sequence, TypeVar

from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionException
from pyspark import Accumulator
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from casstor_ops.cluster.connection import Endpoint, ensure_running
from casstor_ops.errors import EXIT_UNREACHABLE, CasstorError
from casstor_ops.spark.executor_store import store_for
from casstor_ops.spark.job_progress import JobProgress, ProgressMonitor
from casstor_ops.store.api import Store
from casstor_ops.store.bulk.tree_files import FAILED, FILE_ERRORS, failure_status, one_line, outage

TASKS_PER_CORE = 2

_IDENTITY = [T.StructField("id", T.StringType(), False), T.StructField("path", T.StringType(), False),
             T.StructField("bytes", T.LongType(), False), T.StructField("blocks", T.LongType(), False)]
_OUTCOME = [T.StructField("seconds", T.DoubleType(), False), T.StructField("status", T.StringType(), False),
            T.StructField("error", T.StringType(), True)]
# A row's value before its item is done: numbers count from zero, strings are unknown.
_START_VALUES = {"long": 0, "double": 0.0, "string": None}

Item = TypeVar("Item")


def result_schema(*extras: T.StructField) -> T.StructType:
    """The schema of a bulk job's result rows: the common columns, with the job's ``extras`` after ``blocks``.

    Example::

        >>> result_schema(T.StructField("new_blocks", T.LongType(), False)).fieldNames()
        ['id', 'path', 'bytes', 'blocks', 'new_blocks', 'seconds', 'status', 'error']

    Extra columns must be long, double or string (the types a row starts from).
    """
    return T.StructType([*_IDENTITY, *extras, *_OUTCOME])


@dataclass(frozen=True)
class BulkJob(Generic[Item]):
    """What one kind of bulk job does with one item; shipped to the executors, so every callable must pickle.

    * ``name``: ``ingest`` or ``restore`` (the Spark job description says it);
    * ``schema``: :func:`result_schema` with the job's extras;
    * ``size``: the bytes an item weighs, for the bin-packing and the progress
      (a negative size, unknown, weighs nothing);
    * ``describe``: the row values known before the work (at least ``id``
      and ``path``);
    * ``work(store, item, row, scope)``: does the item, filling ``row`` and setting
      its ``status``; raises :data:`FILE_ERRORS` for the item's own failures;
      ``scope`` is what ``task_scope`` yielded (an ingest's writer lease, which
      fences each head write; None by default);
    * ``task_scope(store)``: held around all the items of a task.
    """

    name: str
    schema: T.StructType
    size: Callable[[Item], int]
    describe: Callable[[Item], dict[str, Any]]
    work: Callable[[Store, Item, dict[str, Any], Any], None]
    task_scope: Callable[[Store], ContextManager[object]] = contextlib.nullcontext


def pack_by_size(items: Iterable[Item], bins: int, size: Callable[[Item], int]) -> list[list[Item]]:
    """Greedy LPT bin-packing: largest first, each into the bin with the fewest bytes so far.

    Example::

        >>> pack_by_size([5, 1, 4, 2, 3], 2, size=lambda x: x)
        [[5, 2, 1], [4, 3]]

    Empty bins are dropped (no input: no bin); ``bins`` below 1 counts as 1;
    a negative size weighs nothing. The largest bin is at most 4/3 of the optimum.
    """
    heap = [(0, index) for index in range(max(1, bins))]
    packed: list[list[Item]] = [[] for _ in heap]
    for item in sorted(items, key=size, reverse=True):
        total, index = heapq.heappop(heap)
        packed[index].append(item)
        heapq.heappush(heap, (total + max(0, size(item)), index))
    return [b for b in packed if b]


def task_count(spark: SparkSession, items: int, parallelism: int | None = None) -> int:
    """``parallelism`` tasks, or two per core by default; never more tasks than items, at least one.

    Example::

        >>> task_count(spark, items=1000)    # local[2]                 # doctest: +SKIP
        4
    """
    return max(1, min(items, parallelism or TASKS_PER_CORE * spark.sparkContext.defaultParallelism))


def start_row(job: BulkJob[Item], item: Item) -> dict[str, Any]:
    """The row of ``item`` before its work: ``failed`` with no error, numbers 0, then ``job.describe(item)``.

    Example::

        >>> start_row(restore_job, ("a/x.bin", 1200))                    # doctest: +SKIP
        {'id': 'a/x.bin', 'path': '', 'bytes': 0, 'blocks': 0, 'seconds': 0.0, 'status': 'failed', 'error': None}
    """
    row = {field.name: _START_VALUES[field.dataType.typeName()] for field in job.schema.fields}
    row.update(status=FAILED, **job.describe(item))
    return row


def result_row(job: BulkJob[Item], store: Store, item: Item, scope: Any = None
               ) -> tuple[dict[str, Any], Exception | None]:
    """Do one item with ``job.work`` (inside the task's ``scope``), timed; its result row, whatever became of it, and its error if it failed.

    Example::

        >>> result_row(ingest_job, store, SourceFile("/data/x", "d/x", 10))[0]["status"]  # doctest: +SKIP
        'stored'

    Failures: :data:`FILE_ERRORS` become the row's ``status`` (``corrupt`` for
    a :class:`~casstor_ops.errors.CorruptionError`, else ``failed``) and a
    one-line ``error``; any other exception (a bug) propagates.
    """
    started = time.monotonic()
    row, error = start_row(job, item), None
    try:
        job.work(store, item, row, scope)
    except FILE_ERRORS as err:
        error = err
        row.update(status=failure_status(err), error=one_line(err))
    row["seconds"] = time.monotonic() - started
    return row, error


class TaskResult(NamedTuple):
    """What one task sends back: a row per item, and the outage that failed all of them, if one did."""

    rows: list[dict[str, Any]]
    outage: str | None


def _task(job: BulkJob[Item], endpoint: Endpoint, files_done: Accumulator,
          bytes_done: Accumulator) -> Callable[[Iterator[list[Item]]], Iterator[TaskResult]]:
    def run(bins: Iterator[list[Item]]) -> Iterator[TaskResult]:
        items = [item for b in bins for item in b]
        rows, outages = [], []
        try:
            store = store_for(endpoint)
            with job.task_scope(store) as scope:
                for item in items:
                    row, error = result_row(job, store, item, scope)
                    rows.append(row)
                    outages.append(outage(error, endpoint))
                    files_done.add(1)
                    bytes_done.add(max(job.size(item), 0))
        except FILE_ERRORS as err:  # no cluster, or no lease (a reclaim window)
            undone = items[len(rows):]
            rows += [{**start_row(job, item), "error": one_line(err)} for item in undone]
            outages += [outage(err, endpoint)] * len(undone)
        down = bool(outages) and all(outages)
        yield TaskResult(rows, str(outages[-1]) if down else None)

    return run


def driver_store(endpoint: Endpoint) -> Store:
    """The driver's store on ``endpoint`` (started if it is the embedded node and down).

    Called before any task starts, so a store that cannot work is one error, not one per task.

    Example::

        >>> driver_store(endpoint_from_env()).list("photos/")            # doctest: +SKIP

    Failures: an unreachable cluster or an uninitialised store raise
    :class:`~casstor_ops.errors.CasstorError` (a request failing to reach
    any host: ``EXIT_UNREACHABLE``, one line).
    """
    ensure_running(endpoint)
    try:
        return store_for(endpoint)
    except (NoHostAvailable, ConnectionException) as err:  # connected, then lost it reading the settings
        raise outage(err, endpoint) or CasstorError(f"Cassandra request failed: {one_line(err)}") from None


def run_bulk(spark: SparkSession, job: BulkJob[Item], items: Sequence[Item], endpoint: Endpoint,
             parallelism: int | None = None,
             progress: Callable[[JobProgress], None] | None = None) -> DataFrame:
    """Pack ``items`` into tasks, run them with progress, and return one result row per item.

    ``parallelism``: the number of tasks (default two per core);
    ``progress``: called about once a second with a
    :class:`~casstor_ops.spark.job_progress.JobProgress`.

    Example::

        >>> run_bulk(spark, job, files, endpoint, progress=print_progress("ingest")).count()  # doctest: +SKIP
        120

    No items: an empty DataFrame. Failures: see the module docstring; items fail alone, bugs fail the Spark
    job, and a task whose every item found no Cassandra host raises CasstorError (``EXIT_UNREACHABLE``).
    """
    bins = pack_by_size(items, task_count(spark, len(items), parallelism), size=job.size)
    sc = spark.sparkContext
    sc.setJobDescription(f"casstor {job.name} of {len(items)} files")
    try:
        with ProgressMonitor(spark, len(items), sum(max(job.size(i), 0) for i in items), progress) as monitor:
            tasks = sc.parallelize(bins, max(1, len(bins))).mapPartitions(
                _task(job, endpoint, monitor.files, monitor.bytes)).collect()
    finally:
        sc.setJobDescription(None)
    rows = [row for task in tasks for row in task.rows]
    down = next((task.outage for task in tasks if task.outage), None)
    if down:
        done = sum(row["status"] != FAILED for row in rows)
        raise CasstorError(f"{job.name} stopped, Cassandra is unreachable ({done} of {len(rows)} files done, "
                           f"kept): {down}; re-run the job once it is back", EXIT_UNREACHABLE)
    # Collected once and re-created: the results are small, and a lazy DataFrame
    # would run the whole job again for every action on it.
    return spark.createDataFrame([tuple(r[f.name] for f in job.schema.fields) for r in rows], job.schema)
