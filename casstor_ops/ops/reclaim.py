"""Space reclamation: plan -> stats -> execute, offline (a write window) or online.

The store never deletes a block when a file is removed or overwritten,
because other files may share it. Reclaim does, in restic's prune shape:
:func:`make_plan` computes a :class:`ReclaimPlan` (Spark over the light
tables, see :mod:`casstor_ops.spark.references`), ``plan.table()`` prints what
would be deleted and kept, and :func:`execute` deletes, returning
:class:`ReclaimStats`. :func:`reclaim` runs the whole thing inside the
reclaim window, after forget (restic's ``forget --prune``): forget drops the
version rows no retention policy or snapshot keeps
(:mod:`casstor_ops.store.history`), and reclaim keeps whatever a remaining
version row names. So below, a *head* is any *retained* version: a version
row that is not a delete marker (:func:`~casstor_ops.spark.references.retained_versions`),
the newest of an ID or an older one forget left.

* *candidates* = stored blocks (index rows; with ``scan_blocks`` also content
  rows without one) that no retained version's block list names. A
  one-block version's list is its row's ``lone_block``
  (:mod:`casstor_ops.store.blocks.block_list`): the lists read are ``file_blocks``
  and that column of the retained rows
  (:func:`~casstor_ops.spark.references.head_block_lists`), so a block a
  version row names directly is referenced like any other; its row is
  written after the block was verified, as a list is, so the proof below
  holds for it unchanged (a version row read after the wait names its block
  as a list read then does);
* *missing* = blocks a head names that are not stored. Each is checked by
  key: content still there with its index row lost (a crash between
  reclaim's two deletes) is *repairable* (the index row is rewritten);
  no content is *missing*, a corruption: nothing is deleted unless
  ``force``, and the exit status is :data:`~casstor_ops.errors.EXIT_CORRUPT`;
* *stale block lists* = ``file_blocks`` partitions that are not a head and
  whose version is older than 2 x the commit bound: a store sends no head
  write for a version older than one bound. One sent in time may still be
  applied later (queued, a stalled node), so online the lists are kept,
  like the blocks, when a head names them after the wait (step 4 below).
  The plan reads the heads once, for these and for the candidates.

Deletes run on the executors through the Python driver (the connector has
no DataFrame delete): prepared statements, a bounded number of requests in flight
per task with retries (:class:`~casstor_ops.store.cql.request_queue.RequestQueue`), one
session per Python worker (:mod:`casstor_ops.spark.executor_store`). Index rows
are deleted before content, so a crash never leaves an index row vouching
for a deleted block; it can leave content without an index row, which a
resumed reclaim finds by scanning ``blocks`` (it does so when the crashed
window's state says it was deleting).

Offline (default)
-----------------
Take the window (writers refuse to start), wait for running writers'
leases to end, then plan and sweep: nothing else writes, so the plan is exact.

Online (``--online``): the protocol and why it is safe
-------------------------------------------------------
B is the commit bound (:func:`~casstor_ops.store.coordination.commit_bound.commit_bound_s`): a store
commits a head only if every block it relies on was verified (found by an
existence check, or written by it) less than B before the head write.
ε (``SAFETY.clock_skew_s``) bounds the difference between any two casstor hosts'
clocks, which matters because the driver stamps every write with the
*client's* clock (protocol v3+ client-side timestamps), and Cassandra keeps,
per cell, the value or tombstone with the highest timestamp (a tombstone
wins a tie).

0. Measure the clock skew between this host and every node (through CQL)
   and refuse to run if it may exceed ε (:func:`~casstor_ops.store.coordination.clocks.check_clock_skew`).
1. Plan at wall time tp: candidates C (stored, unreferenced: index rows, and
   with ``scan_blocks`` content rows without one), materialised
   (``localCheckpoint``) so later steps act on exactly this set.
2. Wait until reclaim's clock reads at least tp + 2ε; take T = now - ε.
3. Delete the index rows of C ``USING TIMESTAMP T`` (for a content-only
   candidate, a tombstone where no row is); they finish at time td.
4. Wait until td + B + margin, then re-read heads, block lists and the
   index (a fresh QUORUM read): R = candidates now referenced or indexed
   again, D = C - R; and L = the planned stale lists that no head names now.
5. Rewrite the index rows of R (a fresh, later timestamp); delete the content
   of D and the lists L ``USING TIMESTAMP T``.

Why no committed head can lose a block b in C:

* A store that verified b *before* its index row was deleted (checked
  before td, or wrote it before tp) relies on b and sends its head write
  before td + B. If the write is acknowledged less than B + margin
  (``SAFETY.late_head_margin_s``) after that check,
  it was applied before step 4 reads, so step 4 sees the head: b is in R,
  its content is not deleted and its index row is rewritten. If it is
  acknowledged later (queued behind other requests, a stalled node), the
  store checks b again after the acknowledgement (step 4 of
  :mod:`casstor_ops.store.engine.commit`): b's index row is gone only if step 3
  ran, and then the store uploads b again, as in the next case.
* A store that checks b *after* its index row was deleted does not find
  it and uploads it again, content then index row. It does so after
  reclaim's clock read T + ε, so its clock read more than T: its writes
  carry a timestamp above T and shadow neither tombstone nor are shadowed
  by one. The content delete of step 5 leaves the new content, and the
  new index row survives step 3. This holds whenever it commits, even
  after step 4.
* An index row written after step 3 with a timestamp above T survives its
  tombstone. A store re-uploading the block (the case above) writes one,
  and so does the one case the blob scan adds: a store that wrote a
  content-only candidate's content before tp and was between its two
  writes. Step 4 reads the index, so such a candidate is in R: its
  content is kept, never left behind an index row that vouches for
  nothing. (An index row written with a timestamp at most T is shadowed
  by step 3; its content by step 5, unless a store relied on it, i.e. the
  first case.)
* The garbage itself is deleted: every write of a stored block happened
  before tp (its index row was read in the plan, and content precedes the
  index row; the scan read content rows), so its timestamp is below
  tp + ε <= T.
* A commit that relied on an old verification re-checks it before the
  head write (the store's side of the bound), i.e. it is one of the cases
  above with a later check.

Why no committed head loses its block list: a list in the plan's stale set
has a version time v with v < tp - 2B and no head naming it at tp. Its store
sent its head write (if at all) before v + B on its own clock, so before
tp - B + ε on reclaim's. If the write is applied before step 4 reads the
heads, step 4 sees it and the list is not in L. If it is applied after,
it is acknowledged more than (tp + 2ε + B + margin) - (tp - B + ε) =
2B + ε + margin after it was sent, and later still after the store's
oldest check, so the store's late-head step (step 4 of
:mod:`casstor_ops.store.engine.commit`, durations on its monotonic clock) writes
the list again; it does so after step 4 read, so after reclaim's clock read
T + ε: its rows carry a timestamp above T and survive step 5's delete,
whichever lands first. The list's own rows were written before its head
write was sent, so their timestamps are below v + B < tp - B < T: a list
that is garbage is deleted.

If clocks drift by more than ε the failure is on the safe side for the
garbage (it survives) but not for the second case: step 0 refuses to run
when this host's clock is not within ε of every node's, but the stores'
hosts cannot be measured from here; keep every host on NTP.
A head write that times out on the client on every try, so that the store
fails, may still be applied later (a replica's hint): the margin covers
the usual delay, not days of hints. Likewise a store stalled for more
than B + margin between its content write and its index write (a paused
process) is not covered.
Nothing else may write index rows meanwhile: ``verify --repair-index``
holds the window too (:mod:`casstor_ops.ops.verify`).

Leases and fences
-----------------
Both modes rest on leases that live only while heartbeats refresh them
(:mod:`casstor_ops.store.coordination.heartbeat`). A store paused or cut off for longer
than the lease TTL looks finished to an offline reclaim; it fences its head
write and stops instead of committing blocks that reclaim may have deleted.
A reclaim whose own heartbeat lapsed may find its window taken over by a
second reclaim (which re-plans and sweeps); so :func:`execute` calls the
window's fence before each write step (index-row deletes, the rescues after
the online wait, content deletes, block-list deletes, index repairs) and a
lapsed reclaim stops there with :class:`~casstor_ops.errors.LeaseLapsedError`,
deleting and rewriting nothing more. The deletes run in Spark tasks on the
executors, which cannot see the driver's lease: the fence is the driver's,
between steps, and a step already running finishes. Its rows were planned
as garbage under a live lease and are deleted ``USING TIMESTAMP T``, so a
block re-uploaded after a takeover (a later timestamp) survives them.

Example::

    >>> with ReclaimWindow(session, WindowMode.OFFLINE) as window:   # doctest: +SKIP
    ...     plan = make_plan(spark, session)
    ...     print(plan.table())
    ...     stats = execute(spark, session, plan, window.hold)
    >>> reclaim(spark, session, online=True).exit_code  # doctest: +SKIP

Failures: :class:`~casstor_ops.errors.CorruptionError` (exit 3) for
missing blocks without ``force``; :class:`~casstor_ops.errors.CasstorError`
(exit 1) when online and a node's clock may be more than ε off;
:class:`~casstor_ops.errors.MaintenanceError` (exit 5) when another reclaim
(or a verify repair) holds the window;
:class:`~casstor_ops.errors.LeaseLapsedError` (exit 11, one line that says
how to resume) when the reclaim's heartbeat may have lapsed; any other
failure leaves the window open and says how to resume or clear it.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cassandra.cluster import Session

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env
from casstor_ops.errors import EXIT_CORRUPT, CorruptionError, LeaseLapsedError
from casstor_ops.ops.units import human_bytes
from casstor_ops.spark.executor_store import store_for
from casstor_ops.spark.references import (block_inventory, head_block_lists, is_garbage, is_missing,
                                          referenced_blocks, retained_versions, stale_block_lists, stored_blocks,
                                          unindexed_blocks)
from casstor_ops.store.coordination.clocks import check_clock_skew
from casstor_ops.store.coordination.commit_bound import commit_bound_s
from casstor_ops.store.coordination.leases import wait_for_writers
from casstor_ops.store.coordination.reclaim_window import (RESUME_HINT, ReclaimWindow, WindowHold, WindowMode,
                                                         WindowState)
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.request_queue import RequestQueue
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.history.forget import forget
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.schema import require_settings

REQUESTS_PER_TASK = 32    # deletes in flight per Spark task
MISSING_SHOWN = 5

# What a key check says about a referenced block without an index row.
RACED, REPAIRABLE, MISSING = "raced", "repairable", "missing"


@dataclass(frozen=True)
class Count:
    blocks: int
    bytes: int

    @classmethod
    def of(cls, df: DataFrame) -> "Count":
        row = df.agg(F.count(F.lit(1)).alias("n"), F.sum("size").alias("b")).first()
        return cls(row.n, row.b or 0)


@dataclass
class ReclaimPlan:
    """What reclaim found and would do; the DataFrames are materialised, not re-read."""

    mode: WindowMode
    planned_at: datetime
    commit_bound_s: int
    stored: Count
    referenced: Count
    candidates: Count
    kept: Count                      # stored and referenced
    unindexed: Count | None          # content rows without index (None: not scanned)
    repairable: Count
    missing: Count
    missing_sample: list[str]
    stale_lists: int
    stale_list_rows: int
    candidate_rows: DataFrame = field(repr=False)   # (hash, size)
    repair_rows: DataFrame = field(repr=False)      # (hash, size)
    stale_rows: DataFrame = field(repr=False)       # (id, version, rows)

    def table(self) -> str:
        rows = [("stored blocks (index rows)", self.stored),
                ("referenced by committed files", self.referenced)]
        if self.unindexed is not None:
            rows.append(("content rows without index row", self.unindexed))
        rows += [("garbage: to delete", self.candidates),
                 ("kept", self.kept),
                 ("missing (referenced, not stored)", self.missing),
                 ("index rows to repair", self.repairable)]
        lines = [f"reclaim plan ({self.mode}, {self.planned_at:%Y-%m-%d %H:%M:%S} UTC, "
                 f"commit bound {self.commit_bound_s} s)",
                 f"  {'':34} {'blocks':>10} {'bytes':>12}"]
        lines += [f"  {label:34} {c.blocks:>10,} {human_bytes(c.bytes):>12}" for label, c in rows]
        lines.append(f"  {'stale block lists: to delete':34} {self.stale_lists:>10,} lists, "
                     f"{self.stale_list_rows:,} rows")
        if self.missing.blocks:
            lines.append(f"  missing blocks, e.g. {', '.join(self.missing_sample)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ReclaimStats:
    """What :func:`execute` did."""

    deleted: Count
    rescued: Count              # online: candidates committed or indexed meanwhile (kept, index rewritten)
    repaired_index_rows: int
    deleted_lists: int
    seconds: float

    def table(self) -> str:
        return "\n".join([
            f"reclaim done in {self.seconds:.1f} s",
            f"  {'':34} {'blocks':>10} {'bytes':>12}",
            f"  {'deleted':34} {self.deleted.blocks:>10,} {human_bytes(self.deleted.bytes):>12}",
            f"  {'rescued (in use again)':34} {self.rescued.blocks:>10,} {human_bytes(self.rescued.bytes):>12}",
            f"  {'index rows repaired':34} {self.repaired_index_rows:>10,}",
            f"  {'stale block lists deleted':34} {self.deleted_lists:>10,}"])


# -- executor side ------------------------------------------------------------------------------

def _run_writes(endpoint: Endpoint, statement_name: str, params: Callable[[object], tuple]
                ) -> Callable[[Iterable], Iterator[int]]:
    """A ``mapPartitions`` function: one prepared write per row, a bounded number in flight; yields the count.

    ``statement_name`` names a :class:`~casstor_ops.store.cql.statements.Statements` attribute (a name, not the
    statement: prepared statements belong to a session, and each executor has its own).
    """

    def run(rows: Iterable) -> Iterator[int]:
        session = store_for(endpoint).session
        statement = getattr(Statements.for_session(session), statement_name)
        requests = RequestQueue(session, REQUESTS_PER_TASK)
        done = 0
        for row in rows:
            while requests.in_flight >= requests.max_requests:
                requests.poll()
            requests.submit(statement, params(row), lambda _: None)
            done += 1
        requests.drain()
        yield done

    return run


def _apply(df: DataFrame, statement_name: str, params: Callable[[object], tuple]) -> int:
    endpoint = endpoint_from_env()
    return int(df.rdd.mapPartitions(_run_writes(endpoint, statement_name, params)).sum())


def _classify_missing(endpoint: Endpoint) -> Callable[[Iterable], Iterator[tuple]]:
    """Key checks of referenced blocks the index lacked: raced, repairable or missing."""

    def run(rows: Iterable) -> Iterator[tuple]:
        session = store_for(endpoint).session
        st = Statements.for_session(session)
        for row in rows:
            key = bytes(row.hash)
            if session.execute(st.index_size, (key,)).one() is not None:
                state = RACED       # a store indexed it after the plan read the index
            elif session.execute(st.block_size, (key,)).one() is not None:
                state = REPAIRABLE
            else:
                state = MISSING
            yield key, row.size, state

    return run


_CLASSIFIED = T.StructType([T.StructField("hash", T.BinaryType()), T.StructField("size", T.IntegerType()),
                            T.StructField("state", T.StringType())])


# -- driver side --------------------------------------------------------------------------------

def _count(totals, name: str) -> Count:
    return Count(totals[f"{name}_n"], totals[f"{name}_b"] or 0)


def make_plan(spark: SparkSession, session: Session, mode: WindowMode = WindowMode.OFFLINE,
              scan_blocks: bool = False) -> ReclaimPlan:
    """Compute what reclaim would delete and keep; reads only, deletes nothing.

    One pass: stored and referenced blocks, full-outer-joined on the hash and
    materialised once; every figure is one aggregation over that, and the
    candidates are a filter of it (so they stay exactly the planned set).
    """
    planned_at = datetime.now(timezone.utc)
    bound = commit_bound_s(session)
    stored = stored_blocks(spark).withColumn("indexed", F.lit(True))
    if scan_blocks:
        # Materialised first: left inside the union below, Spark 3.5 hung (no task ever started).
        content_only = unindexed_blocks(spark).localCheckpoint()
        stored = stored.unionByName(content_only.withColumn("indexed", F.lit(False)))
    # One reading of the heads for the referenced blocks and the stale block lists: with two, a version
    # overwritten in between kept its blocks as a head's and lost its list as stale, so nothing showed any more
    # why those blocks outlived the plan.
    head_rows = retained_versions(spark).localCheckpoint()
    referenced = referenced_blocks(spark, lists=head_block_lists(spark, head_rows=head_rows))
    joined = block_inventory(stored, referenced).localCheckpoint()
    is_stored, is_referenced = F.col("size").isNotNull(), F.col("refs").isNotNull()
    indexed = F.coalesce(F.col("indexed"), F.lit(False))
    unstored = is_missing()  # missing, or content whose index row is lost: the key checks tell them apart
    groups = {"stored": indexed, "unindexed": is_stored & ~indexed, "referenced": is_referenced,
              "candidates": is_garbage(), "kept": indexed & is_referenced, "unstored": unstored}
    size = F.coalesce(F.col("size"), F.col("ref_size"))
    totals = joined.agg(*[agg for name, cond in groups.items() for agg in (
        F.count(F.when(cond, True)).alias(f"{name}_n"), F.sum(F.when(cond, size)).alias(f"{name}_b"))]).first()
    candidates = joined.where(is_garbage()).select("hash", "size")
    classified = spark.createDataFrame([], _CLASSIFIED)
    if totals.unstored_n:  # the usual case starts no Python worker
        classified = spark.createDataFrame(
            joined.where(unstored).select("hash", F.col("ref_size").alias("size")).rdd
            .mapPartitions(_classify_missing(endpoint_from_env())), _CLASSIFIED).localCheckpoint()
    lost = classified.where(F.col("state") == MISSING)
    repair = classified.where(F.col("state") == REPAIRABLE).select("hash", "size")
    stale = stale_block_lists(spark, planned_at - timedelta(seconds=2 * bound), head_rows).localCheckpoint()
    stale_totals = stale.agg(F.count(F.lit(1)).alias("n"), F.sum("rows").alias("rows")).first()
    return ReclaimPlan(
        mode=mode, planned_at=planned_at, commit_bound_s=bound,
        stored=_count(totals, "stored"), referenced=_count(totals, "referenced"),
        candidates=_count(totals, "candidates"), kept=_count(totals, "kept"),
        unindexed=_count(totals, "unindexed") if scan_blocks else None,
        repairable=Count.of(repair) if totals.unstored_n else Count(0, 0),
        missing=Count.of(lost) if totals.unstored_n else Count(0, 0),
        missing_sample=[bytes(r.hash).hex() for r in lost.limit(MISSING_SHOWN).collect()] if totals.unstored_n else [],
        stale_lists=stale_totals.n, stale_list_rows=stale_totals.rows or 0,
        candidate_rows=candidates, repair_rows=repair, stale_rows=stale)


def _in_use_again(spark: SparkSession, head_rows: DataFrame) -> DataFrame:
    """``(hash)`` of the blocks a head names or the index holds now: step 4's R, read after the wait.

    The index side is what makes the blob scan's content-only candidates
    safe (see the module docstring): an index row there now was written
    after step 3 with a timestamp above T, so deleting its content would
    leave it vouching for nothing. Both sides are read (materialised) here.
    """
    # Each side materialised before the union: a union of the two reads left lazy hung Spark 3.5 (no task started).
    lists = head_block_lists(spark, head_rows=head_rows)
    return (referenced_blocks(spark, lists=lists).select("hash").localCheckpoint()
            .unionByName(stored_blocks(spark).select("hash").localCheckpoint()))


def _not_heads_now(stale_rows: DataFrame, head_rows: DataFrame) -> DataFrame:
    """The planned stale block lists that no head names now: step 4's re-read of the heads, for the lists.

    A version whose head write was sent in time but applied after the plan
    is a head by now, or its store writes the list again (see the module
    docstring); materialised, so the deletes act on this reading.
    """
    return stale_rows.join(head_rows.select("id", "version"), ["id", "version"], "left_anti").localCheckpoint()


def _delete_timestamp(planned_at: datetime) -> int:
    """T of the module docstring, in microseconds: at least ε after the plan, ε before now."""
    earliest = planned_at.timestamp() + 2 * SAFETY.clock_skew_s
    if time.time() < earliest:
        time.sleep(earliest - time.time())
    return int((time.time() - SAFETY.clock_skew_s) * 1_000_000)


def execute(spark: SparkSession, session: Session, plan: ReclaimPlan, window: WindowHold,
            log: Callable[[str], None] = lambda msg: None) -> ReclaimStats:
    """Delete what ``plan`` found (see the module docstring for the order and the online waits), inside the held
    reclaim ``window`` of the plan's mode.

    Offline, the window must have no writer left; online, stores go on. It
    does not look at missing blocks: refusing to run while some are missing
    is :func:`reclaim`'s job. The window records each step (a resumed
    reclaim knows where it was), and its fence runs before each write step
    and raises LeaseLapsedError, ending the sweep there, once the window's
    heartbeat may have lapsed. A plan of another mode than the window's is a
    bug (ValueError): an online plan's deletes are only safe under the online
    protocol's waits, an offline one's only with every writer stopped.

    Example: ``execute(spark, session, plan, window.hold)`` inside
    ``with ReclaimWindow(session, WindowMode.OFFLINE) as window``.
    """
    if plan.mode != window.mode:
        raise ValueError(f"a plan made {plan.mode} cannot run in a window held {window.mode}")
    started = time.monotonic()
    stamp = _delete_timestamp(plan.planned_at)
    stamped_hash = lambda r: (stamp, bytes(r.hash))  # noqa: E731  (pickled to the executors)
    # The stored size is not carried through the plan: null counts as raw in stats until a verify repair.
    index_row = lambda r: (bytes(r.hash), r.size, None)  # noqa: E731

    def step(before: str, df: DataFrame, statement_name: str, params: Callable[[object], tuple]) -> int:
        window.fence(before)
        return _apply(df, statement_name, params)

    window.set_state(WindowState.DELETING_INDEX)
    log(f"deleting {plan.candidates.blocks:,} index rows")
    step("deleting index rows", plan.candidate_rows, "delete_index_at", stamped_hash)
    rescued = spark.createDataFrame([], plan.candidate_rows.schema)
    doomed, stale = plan.candidate_rows, plan.stale_rows
    if plan.mode == WindowMode.ONLINE:
        wait_s = commit_bound_s(session) + SAFETY.late_head_margin_s
        window.set_state(WindowState.WAITING_FOR_COMMITS)
        log(f"waiting {wait_s:.0f} s (commit bound + margin) for stores that relied on those blocks")
        time.sleep(wait_s)
        # One reading of the heads for the blocks and the lists alike, as the plan does.
        head_rows = retained_versions(spark).localCheckpoint()
        fresh = _in_use_again(spark, head_rows)
        rescued = plan.candidate_rows.join(fresh, "hash", "left_semi").localCheckpoint()
        doomed = plan.candidate_rows.join(fresh, "hash", "left_anti").localCheckpoint()
        step("rewriting rescued index rows after the online wait", rescued, "insert_existing", index_row)
        stale = _not_heads_now(plan.stale_rows, head_rows)
    window.set_state(WindowState.DELETING_CONTENT)
    log("deleting block content")
    step("deleting block content", doomed, "delete_block_at", stamped_hash)
    deleted_lists = step("deleting stale block lists", stale, "delete_block_list_at",
                         lambda r: (stamp, r.id, uuid.UUID(r.version)))
    repaired = step("repairing index rows", plan.repair_rows, "insert_existing", index_row)
    return ReclaimStats(deleted=Count.of(doomed), rescued=Count.of(rescued), repaired_index_rows=repaired,
                        deleted_lists=deleted_lists, seconds=time.monotonic() - started)


@dataclass(frozen=True)
class ReclaimOutcome:
    """What :func:`reclaim` found and did; ``stats`` is None for a dry run or a refused one."""

    plan: ReclaimPlan
    stats: ReclaimStats | None

    @property
    def exit_code(self) -> int:
        return EXIT_CORRUPT if self.plan.missing.blocks else 0


def reclaim(spark: SparkSession, session: Session, online: bool = False, dry_run: bool = False,
            force: bool = False, scan_blocks: bool = False, log: Callable[[str], None] = print,
            warn: Callable[[str], None] = lambda msg: print(f"casstor: {msg}", file=sys.stderr)) -> ReclaimOutcome:
    """Forget, plan, print and (unless ``dry_run``) execute inside the reclaim window.

    ``exit_code`` of the outcome is 0, or :data:`~casstor_ops.errors.EXIT_CORRUPT`
    when blocks are missing (deleting anyway only with ``force``; without it
    the window is closed and CorruptionError raised). Online, it first
    refuses (CasstorError, before taking the window) when this host's clock
    may be more than ``SAFETY.clock_skew_s`` from a node's. A failure after the
    window was taken leaves it open and ``warn`` says how to resume or clear it;
    a lapsed lease raises LeaseLapsedError, whose one line already says so.
    """
    mode = WindowMode.ONLINE if online else WindowMode.OFFLINE
    namespace = Namespace.for_session(session, require_settings(session).directory_rows)
    if dry_run:
        log(forget(session, namespace, dry_run=True).table())
        plan = make_plan(spark, session, mode, scan_blocks)
        log(plan.table())
        log("dry run: nothing deleted (the plan is before forget: what forget would free comes on top)"
            + (" (stores are running: the figures may move)" if online else ""))
        return ReclaimOutcome(plan, None)
    if online:
        log(check_clock_skew(session, SAFETY.clock_skew_s))
    stats = None
    window = ReclaimWindow(session, mode)
    with window:
        try:
            if window.resumed is not None:
                log(f"resuming the crashed {window.resumed.describe()}")
                # A crash while deleting can leave content whose index row is gone: find it.
                scan_blocks = scan_blocks or window.resumed.state.startswith("deleting")
            if mode == WindowMode.OFFLINE:
                window.set_state(WindowState.WAITING_FOR_WRITERS)
                wait_for_writers(session, SAFETY.writers_timeout_s, log=log)
            window.set_state(WindowState.PLANNING)
            # Forget first, inside the window: it removes references only, so it needs no wait of its own.
            log(forget(session, namespace).table())
            plan = make_plan(spark, session, mode, scan_blocks)
            log(plan.table())
            if not plan.missing.blocks or force:
                stats = execute(spark, session, plan, window.hold, log=log)
                log(stats.table())
        except LeaseLapsedError:
            raise
        except BaseException:
            warn(f"the reclaim window is still open: {RESUME_HINT}")
            raise
    if plan.missing.blocks and not force:
        raise CorruptionError(
            f"{plan.missing.blocks} referenced block(s) are missing (e.g. {plan.missing_sample[0]}): nothing was "
            f"deleted; find the damaged files with the verify job, or reclaim anyway with --force")
    return ReclaimOutcome(plan, stats)
