"""Whole trees in one process: ``casstor store DIR PREFIX`` and ``casstor restore PREFIX DIR``.

What users of restic or borg expect for a tree that does not need Spark:
the files of a directory (:mod:`casstor_ops.store.trees.source_listing`: same
IDs, same symlink rule as ``jobs/ingest.py``: no symlink followed unless
``follow_symlinks``, a link to a file reported ``skipped``) stored ``workers`` at a time
by threads sharing one :class:`~casstor_ops.store.api.Store` and one
:class:`~casstor_ops.store.coordination.leases.WriterLease` (one lease LWT per process,
not per file; it fences every head write), each file skipped when it is
committed unchanged; a tree of many small files stored so by up to ``processes``
client processes (:func:`process_count`), each taking the next item in turn
(:mod:`casstor_ops.store.bulk.tree_processes`); or every file under a prefix restored below a
directory, its small files in batches that share their reads and their
flush to disk (:mod:`casstor_ops.store.bulk.batch_restore`; a file with
any doubt, and a large one, restored alone). The per-file work is the
Spark jobs' own (:mod:`casstor_ops.store.bulk.tree_files`); only the runner
differs, and a store takes small files (at most
:data:`~casstor_ops.store.engine.batch_upload.SMALL_FILE_BYTES`) ``BATCH_FILES`` at a
time, each batch one worker's item (:func:`small_batches`,
:class:`~casstor_ops.store.engine.batch_upload.BatchUpload`). The
workers share one connection, so they share one request budget: each gets
1/``workers`` of a lone store's requests in flight (:func:`_sharing`; 4
stores of 32 each overloaded the connection and failed files). Memory is
bounded by ``workers`` stores' held bytes (each :data:`~casstor_ops.store.engine.upload.MAX_HELD_BYTES`
at most, a batch ``BATCH_BYTES``) or restores' read-ahead.

Example::

    >>> report = store_tree(store, "src/", prefix="src/")        # doctest: +SKIP
    >>> report.summary()                                          # doctest: +SKIP
    'store: 120 files, 45.2 MB: 118 stored, 2 skipped, 0 failed; 12.1 MB new in 250 new blocks, 3.0 MB as ...'
    >>> report.exit_code                                          # doctest: +SKIP
    0

Failures: a file that fails (unreadable, vanished, a store error, a damaged
block on restore) gets its row's status and one-line error and the others go
on; :attr:`TreeReport.exit_code` is then ``EXIT_PARTIAL`` (4), or
``EXIT_CORRUPT`` (3) when a restore met corruption. A source that cannot be
listed, a prefix with no file, a lapsed lease (exit 11) or a cluster that
becomes unreachable (exit 6: files not started are not tried; a re-run
resumes, skipping what was stored) raise
:class:`~casstor_ops.errors.CasstorError` once.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar

from casstor_ops.cluster.connection import endpoint_of
from casstor_ops.errors import EXIT_UNREACHABLE, EXIT_USAGE, CasstorError, LeaseLapsedError
from casstor_ops.store.api import FileInfo, Store
from casstor_ops.store.bulk.batch_restore import BatchRestore, batched, batches
from casstor_ops.store.bulk.tree_files import (CORRUPT, FAILED, FILE_ERRORS, INGEST_STATUSES, NEW_COUNTS,
                                          RESTORE_STATUSES, SKIPPED, ListedHeads, check_prefix, exit_status,
                                          failure_status, listed_files, one_line, outage, restore_below,
                                          store_small_files, store_unless_unchanged, summary_line)
from casstor_ops.store.bulk.tree_processes import Standby, in_processes
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.cql.runs import runs
from casstor_ops.store.engine.batch_upload import SMALL_FILE_BYTES
from casstor_ops.store.engine.restore import READ_CONCURRENCY
from casstor_ops.store.engine.upload import MAX_REQUESTS
from casstor_ops.store.namespace.entries import BatchedEntries
from casstor_ops.store.progress import ProgressCallback
from casstor_ops.store.trees.path_ids import path_to_id
from casstor_ops.store.trees.source_listing import UNKNOWN_SIZE, SourceFile, list_source

# Files (or small-file batches) at once a process. A store is CPU-bound on two cores (hashing, compressing, the
# driver's Python, in two processes for a tree of small files): 2 took 0.88-1.00x of 4's time for the small tree
# (medians of 4-7 alternated first stores, five sets, about 20 of 25 faster, 3-7 % less client CPU) and level for the
# tars. A restore waits on its reads: 2 took 1.12x of 4's for the tars (docs/benchmarks.md, "two files at once").
STORE_WORKERS = 2
RESTORE_WORKERS = 4
# Client processes for a tree of many small files (casstor_ops.store.bulk.tree_processes says why: two took 0.82x
# the time of one on 2 cores; three, no less than two), and the small files a process must have to pay for its
# start (~0.3 s of CPU: imports, a connection, a lease). The others start only once the first finds a file to
# read: the bench tree's unchanged re-run took 0.50-0.63 s so, against 0.67-0.69 s with a second process started
# up front (which took over a few directory reads only); a first store level (8 alternated pairs, medians 3.14
# and 3.17 s).
TREE_PROCESSES = min(2, os.cpu_count() or 1)
MIN_PROCESS_FILES = 1000
# Small files stored together (casstor_ops.store.engine.batch_upload), this many at most and this many bytes (what one
# worker holds in memory). Measured on the bench's tree of 5,626 files, two passes: 32 files 657-205 files/s,
# 64 516-367, 128 808-641, 256 871-731 (1.46 requests a file from 128 up: the blocks' content is the rest).
BATCH_FILES = 256
BATCH_BYTES = 8 * 1024 * 1024
Item = TypeVar("Item")
_COUNTS = ("bytes", "blocks", *NEW_COUNTS)


@dataclass
class TreeReport:
    """One row per file (``id``, ``path``, counts, ``status``, ``error``) and the command's wall time."""

    what: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def totals(self) -> dict[str, int]:
        """Files and bytes, the count of each status (zeros included) and, for a store, :data:`NEW_COUNTS`."""
        statuses = INGEST_STATUSES if self.what == "store" else RESTORE_STATUSES
        sums = ("bytes", *NEW_COUNTS) if self.what == "store" else ("bytes",)
        return {"files": len(self.rows), **{s: sum(r["status"] == s for r in self.rows) for s in statuses},
                **{name: sum(r[name] for r in self.rows) for name in sums}}

    @property
    def exit_code(self) -> int:
        return exit_status({row["status"] for row in self.rows})

    @property
    def failures(self) -> list[dict[str, Any]]:
        return sorted((row for row in self.rows if row["status"] in (FAILED, CORRUPT)), key=lambda r: r["id"])

    @property
    def skipped_with_reason(self) -> list[dict[str, Any]]:
        """Files listed but not read (a symlink, not followed): reported, not failed."""
        return sorted((row for row in self.rows if row["status"] == SKIPPED and row["error"]), key=lambda r: r["id"])

    def summary(self) -> str:
        """The Spark jobs' summary line (:func:`~casstor_ops.store.bulk.tree_files.summary_line`) and the wall time."""
        return f"{summary_line(self.what, self.totals())} in {self.seconds:.1f} s"


def _row(file_id: str, path: str) -> dict[str, Any]:
    return {"id": file_id, "path": path, **dict.fromkeys(_COUNTS, 0), "status": FAILED, "error": None}


class Finished(NamedTuple):
    """A file's report row, and its error when it failed (recorded in the row as well)."""

    row: dict[str, Any]
    error: BaseException | None


def _attempt(row: dict[str, Any], action: Callable[[dict[str, Any]], None]) -> Finished:
    """``action(row)`` for one file: its row, and its error (recorded in the row) if it failed with one of
    :data:`FILE_ERRORS`; a lapsed lease stops the command."""
    try:
        action(row)
    except LeaseLapsedError:
        raise
    except FILE_ERRORS as err:
        return Finished(_failed(row, err), err)
    return Finished(row, None)


def _failed(row: dict[str, Any], err: BaseException) -> dict[str, Any]:
    row.update(status=failure_status(err), error=one_line(err))
    return row


def _run(store: Store, what: str, items: Iterable[Item],
         work: Callable[[Item], list[Finished]], workers: int,
         progress: ProgressCallback | None, ahead: Callable[[Item], None] | None = None) -> TreeReport:
    """Do ``work`` on every item (one file, or a batch of files: a row each), ``workers`` at a time; stop at a
    lapsed lease or a cluster outage. ``ahead``: told each item as it is queued (before a worker takes it: reads
    it will need can start)."""
    report, started = TreeReport(what), time.monotonic()
    pending: set[Future] = set()
    with ThreadPoolExecutor(workers, thread_name_prefix=f"casstor-{what}") as pool:
        try:
            for item in items:  # at most 2 x workers submitted: a huge tree is not held as futures
                if ahead is not None:
                    ahead(item)
                pending.add(pool.submit(work, item))
                if len(pending) >= 2 * workers:
                    pending = _collect(report, pending, progress, store)
            while pending:
                pending = _collect(report, pending, progress, store)
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    report.seconds = time.monotonic() - started
    return report


def _collect(report: TreeReport, pending: set[Future], progress: ProgressCallback | None, store: Store
             ) -> set[Future]:
    """Record the files finished (at least one); raise at the first that found the cluster unreachable."""
    done, pending = wait(pending, return_when=FIRST_COMPLETED)
    for row, err in (finished for future in done for finished in future.result()):
        report.rows.append(row)
        if progress:
            progress(row["bytes"])
        down = outage(err, endpoint_of(store.session)) if err is not None else None
        if down is not None:
            raise CasstorError(f"{report.what} stopped, Cassandra is unreachable ({len(report.rows)} files done; "
                               f"what was committed is kept): {down}; run it again once it is back",
                               EXIT_UNREACHABLE)
    return pending


def _sharing(store: Store, workers: int, entries: BatchedEntries | None = None) -> Store:
    """A store on the same session whose uploads and restores keep 1/``workers`` of the usual requests in flight
    (and whose commits queue their entries in ``entries``, when given)."""
    return Store(store.session, max_requests=max(4, MAX_REQUESTS // workers),
                 read_concurrency=max(1, READ_CONCURRENCY // workers), settings=store.settings, entries=entries)


def store_tree(store: Store, source: str | os.PathLike, prefix: str = "", workers: int = STORE_WORKERS,
               follow_symlinks: bool = False, progress: ProgressCallback | None = None,
               processes: int = TREE_PROCESSES, standby: Standby | None = None) -> TreeReport:
    """Store every file below ``source`` as ``prefix`` + its relative path, unchanged files skipped; a tree of many
    small files by up to ``processes`` client processes (:func:`process_count`; ``standby``'s, when given: see
    :class:`~casstor_ops.store.bulk.tree_processes.Standby`), ``workers`` threads each.

    Example: ``store_tree(store, "photos", "photos/").exit_code`` -> ``0``. Failures: see the module docstring.
    """
    files = list_source(source, check_prefix(prefix), follow_symlinks=follow_symlinks)
    run = partial(store_items, workers=workers, follow_symlinks=follow_symlinks)
    items = small_batches(files)
    count = process_count(items, processes)
    if count == 1:
        return run(store, items, progress)
    return in_processes(store, items, count, run, progress, standby)


def store_items(store: Store, items: Iterable[SourceFile | list[SourceFile]], progress: ProgressCallback | None,
                on_work: Callable[[], None] | None = None, workers: int = STORE_WORKERS,
                follow_symlinks: bool = False) -> TreeReport:
    """Store ``items`` (files alone and batches of small files, as :func:`small_batches` gives them) under one
    writer lease, ``workers`` at a time; ``on_work`` is called when a file is first found not listed unchanged."""
    entries = BatchedEntries(store.namespace)
    store = _sharing(store, workers, entries)
    listed = ListedHeads(store, entries, on_read=on_work)
    with WriterLease(store.session, "store") as lease:
        try:
            def one(item: SourceFile | list[SourceFile]) -> list[Finished]:
                if isinstance(item, SourceFile):
                    return [_attempt(_row(item.file_id, path_to_id(item.path)),
                                     lambda row: store_unless_unchanged(store, item, row, lease,
                                                                        follow_symlinks=follow_symlinks,
                                                                        listed=listed))]
                rows = [_row(e.file_id, path_to_id(e.path)) for e in item]
                errors = store_small_files(store, item, rows, lease, follow_symlinks=follow_symlinks, listed=listed)
                return [Finished(row if err is None else _failed(row, err), err) for row, err in zip(rows, errors)]

            report = _run(store, "store", items, one, workers, progress,
                          lambda item: listed.prefetch(e.file_id for e in _files(item)))
        except BaseException:
            with contextlib.suppress(Exception):  # list what was committed if the cluster lets us; the error stands
                entries.flush()
            raise
        finally:
            listed.close()
        entries.flush()
        return report


def _files(item: SourceFile | list[SourceFile]) -> list[SourceFile]:
    return [item] if isinstance(item, SourceFile) else item


def small_batches(files: list[SourceFile], max_files: int = BATCH_FILES, max_bytes: int = BATCH_BYTES
                  ) -> list[SourceFile | list[SourceFile]]:
    """The files of a tree as a store takes them: each file larger than ``SMALL_FILE_BYTES`` (or of unknown size)
    alone, first (the longest items start first); then consecutive small files together, at most ``max_files``
    files and ``max_bytes`` bytes a batch. Listed in path order, a batch is one directory's files or a few
    neighbours' (their entries still go by directory: a batch by directory alone held 14 files on average in the
    bench's tree of 5,626, too few to pay).

    Example::

        >>> f = lambda path, size: SourceFile(path, path, size)
        >>> items = small_batches([f("a/1", 10), f("a/big", 5 << 20), f("a/2", 10), f("a/3", 10), f("b/1", 10)],
        ...                       max_files=2)
        >>> [[e.path for e in i] if isinstance(i, list) else i.path for i in items]
        ['a/big', ['a/1', 'a/2'], ['a/3', 'b/1']]
    """
    alone = [entry for entry in files if _alone(entry)]
    return [*alone, *runs((entry for entry in files if not _alone(entry)), attrgetter("size"), max_files, max_bytes)]


def process_count(items: Sequence[SourceFile | list[SourceFile]], processes: int, min_files: int | None = None
                  ) -> int:
    """How many of at most ``processes`` client processes store ``items``: one for every ``min_files`` (default
    :data:`MIN_PROCESS_FILES`) of the small files in its batches, at least one (a file stored alone counts for
    none: a large file's bytes are hashed and compressed off the GIL).

    Example::

        >>> f = lambda path, size: SourceFile(path, path, size)
        >>> items = small_batches([f(f"d/{n}", 10) for n in range(6)] + [f("big", 5 << 20)], max_files=2)
        >>> process_count(items, 2, min_files=3), process_count(items, 2, min_files=4)
        (2, 1)
    """
    small = sum(len(item) for item in items if isinstance(item, list))
    return max(1, min(processes, small // (MIN_PROCESS_FILES if min_files is None else min_files)))


def _alone(entry: SourceFile) -> bool:
    return entry.size == UNKNOWN_SIZE or entry.size > SMALL_FILE_BYTES


def restore_tree(store: Store, prefix: str, dest_dir: str | os.PathLike, force: bool = False,
                 workers: int = RESTORE_WORKERS, progress: ProgressCallback | None = None,
                 at: datetime | None = None) -> TreeReport:
    """Restore every committed file whose ID starts with ``prefix`` to ``dest_dir/<the rest of its ID as a path>``,
    verified; ``at``: the tree as it was then (each file's version then, exactly; files added since left out,
    files removed since restored).

    Example: ``restore_tree(store, "photos/", "/restore").exit_code`` -> ``0``. Failures: see the module
    docstring; an existing file is refused (that file fails) unless ``force``.
    """
    if prefix and not prefix.endswith("/"):
        raise CasstorError(f"prefix {prefix!r}: a tree's prefix ends with '/'", EXIT_USAGE)
    dest = os.path.abspath(dest_dir)
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise CasstorError(f"{dest!r} exists and is not a directory")
    files = listed_files(store, prefix, at)  # each file's version as listed: restored without reading its head
    os.makedirs(dest, exist_ok=True)
    store = _sharing(store, workers)

    def restore_alone(head: FileInfo, row: dict[str, Any]) -> Finished:
        return _attempt(row, lambda row: restore_below(store, dest, head.id, row, force, below=prefix, head=head))

    def restore_item(heads: list[FileInfo]) -> list[Finished]:
        if not batched(heads[0]):
            return [restore_alone(heads[0], _row(heads[0].id, ""))]
        pairs = [(head, _row(head.id, "")) for head in heads]
        left = BatchRestore(store, dest, prefix, force).restore(pairs)
        alone = {id(row) for _, row in left}
        finished = [Finished(row, None) for _, row in pairs if id(row) not in alone]
        endpoint = endpoint_of(store.session)
        for head, row in left:
            finished.append(restore_alone(head, row))
            if outage(finished[-1].error, endpoint) is not None:
                break  # the runner stops at it: the files after it are not tried
        return finished

    return _run(store, "restore", _restore_items(files), work=restore_item, workers=workers, progress=progress)


def _restore_items(heads: list[FileInfo]) -> Iterator[list[FileInfo]]:
    """The small files in :func:`batches` (listing order: mostly a directory's files together), then each larger
    one alone."""
    yield from batches(head for head in heads if batched(head))
    yield from ([head] for head in heads if not batched(head))
