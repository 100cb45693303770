"""Writing the directory index: a file's entry after its version, subdirectory markers, and splits.

A store writes its version row (the commit point) and then its entry
(:meth:`Namespace.publish`); both carry the version's time as their write
timestamp (``USING TIMESTAMP``), so whatever order concurrent stores and
removals of one ID land in, the newest version wins in both tables, and an
entry never names an older version than the head. A store killed between the
two leaves a committed file that a listing does not show yet: the next store
of the ID, or ``casstor verify --repair``, writes the entry.

The first write into a directory makes it: the markers that lead to it from
the root, then its ``directories`` row (``IF NOT EXISTS``); a row found means
the markers are there (the row is its key alone, never an LWT: a plain write
cannot undo a split). A directory's generation is cached per session for
``GENERATION_CACHE_S``; a writer with a stale one writes into an older
generation's bucket, which a listing still reads (it reads every generation up
to the current one), so staleness costs only a little over the bound.
A tree store reads each directory before writing into it (:meth:`Namespace.listed`):
that read stands for the writers' own, a generation kept as theirs is, and the
directories found without a row are made together ahead of their first entries
(:meth:`Namespace.make_many`: all their markers, then all their rows, a batch
each, instead of two sequential requests a directory); one left unmade is made
at its first write without a second read, by one thread (the others that need
it meanwhile wait for that one).

Split: after writing an entry, one write in ``directory_rows / SPLIT_CHECKS``
(every write in a store whose bound is at most ``SPLIT_CHECKS``) counts the
bucket it wrote to, and a bucket at the bound moves the directory to the next
generation with a lightweight transaction (one writer wins; the others read
the new generation). Counting reads the bucket's keys only: at the default
bound ~100 rows read per entry written, amortised.

Example::

    >>> ns = Namespace.for_session(session, settings.directory_rows)         # doctest: +SKIP
    >>> ns.publish(head, stored_size=None)                                    # doctest: +SKIP

Failures: the driver's errors propagate (the version is committed whatever
the entry write does: see above).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

from cassandra.cluster import Session
from cassandra.query import UNSET_VALUE

from casstor_ops.store.blocks.block_list import hash_column
from casstor_ops.store.cql.request_queue import query_batches, unlogged_batch
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.namespace.layout import MAX_GENERATION, bucket_of, directory_key, markers, split_id
from casstor_ops.store.namespace.listing import recorded_generation, recorded_generations
from casstor_ops.store.records import FileInfo

GENERATION_CACHE_S = 60.0
# Entries of one directory written together by a tree store (BatchedEntries): ~150 bytes a row, one
# single-partition batch (exempt from the batch size thresholds, as block lists are: casstor_ops.store.engine.commit).
ENTRY_BATCH_FILES = 64
# A tree store's directories whose entries wait at once, and the threads that write them. Written on the committing
# thread and, for most directories (fewer than 64 files), all at the end on one thread, the entries of the bench's
# 5,626 files in 789 new directories (each a generation read, a marker, a row and a batch) took 3.3 s of a 7.3 s
# store.
OPEN_DIRECTORIES = 16
ENTRY_WRITERS = 8
SPLIT_CHECKS = 100            # counts per directory_rows entries written: the overshoot past the bound is ~1 %
_CACHED_DIRECTORIES = 100_000  # generations kept per session (a tree store of more directories reads some again)
# Directories whose rows one request reads (listed_many): a tree store's re-run read each directory's generation,
# then its entries, two round trips one after the other per directory (789 directories of 5,626 small files).
GENERATIONS_A_READ = 100
_UUID_EPOCH = 0x01B21DD213814000  # 100 ns intervals between 1582-10-15 and 1970-01-01


def version_micros(version: uuid.UUID) -> int:
    """A timeuuid's time as the microseconds since 1970 that ``USING TIMESTAMP`` takes."""
    return (version.time - _UUID_EPOCH) // 10


def entry_row(info: FileInfo, stored_size: int | None, deleted: bool) -> tuple:
    """The columns of ``insert_entry`` after its key: what a listing shows of a version."""
    attributes = info.attributes
    digest = hash_column(info.hash, info.lone_block)
    return (info.version, info.size, UNSET_VALUE if digest is None else digest, info.blocks, info.committed_at,
            attributes.mode if attributes else None, attributes.mtime_ns if attributes else None,
            stored_size, deleted, attributes.ino if attributes else None, attributes.ctime_ns if attributes else None,
            info.lone_block)


class Namespace:
    """The directory index of one session: generations cached, directories made once."""

    _cache: "weakref.WeakKeyDictionary[Session, Namespace]" = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    def __init__(self, session: Session, directory_rows: int) -> None:
        self._session = weakref.proxy(session)
        self._st = Statements.for_session(session)
        self._rows = directory_rows
        self._generations: dict[str, tuple[int, float]] = {}
        self._unmade: set[str] = set()  # directories found without a row by listed(): made without reading again
        self._making: dict[str, Future] = {}  # those being made now, by the thread that took them from _unmade
        self._guard = threading.Lock()
        # The cold path (reads and LWTs) of an asynchronous publish, off the caller's thread: an event loop's.
        self._cold = ThreadPoolExecutor(2, thread_name_prefix="casstor-namespace")
        # Buckets with a split check queued: one each, or checks back up behind fast writes while entries keep
        # landing in the full bucket (bench/listing.py measured 9x the bound at a bound of 500).
        self._checking: set[tuple[str, int]] = set()

    @classmethod
    def for_session(cls, session: Session, directory_rows: int) -> "Namespace":
        """The session's namespace, made on first use."""
        with cls._lock:
            found = cls._cache.get(session)
            if found is None:
                found = cls._cache[session] = cls(session, directory_rows)
            return found

    def generation(self, directory: str) -> int:
        """The directory's current generation (cached); makes the directory, with its markers, if it is new."""
        cached = self._generations.get(directory)
        if cached is not None and time.monotonic() - cached[1] < GENERATION_CACHE_S:
            return cached[0]
        with self._guard:
            making = self._making.get(directory)
            mine = making is None and directory in self._unmade
            if mine:
                self._unmade.discard(directory)
                making = self._making[directory] = Future()
        if mine:
            return self._make_once(directory, making)
        if making is not None:
            # Another thread makes it (a new parent of several new directories, made by the entry writers at once):
            # wait, instead of reading its row and making it again (161 reads and ~120 rows of a 5,626-file first
            # store). If that thread failed, read and make it here, as before.
            with contextlib.suppress(Exception):
                return making.result()
        generation = recorded_generation(self._session, self._st, directory)
        if generation is None:
            self._make(directory)
            generation = 0
        self._remember(directory, generation)
        return generation

    def _make_once(self, directory: str, making: Future) -> int:
        """Make ``directory`` (found unmade by :meth:`listed`) and tell the threads waiting for it."""
        try:
            self._make(directory)
            self._remember(directory, 0)
            making.set_result(0)
            return 0
        except BaseException as err:
            making.set_exception(err)
            raise
        finally:
            with self._guard:
                del self._making[directory]

    def listed(self, directory: str) -> int | None:
        """The directory's generation as recorded now, None when it is not made yet (then it has no entries:
        :meth:`_make` writes its row before any entry). Kept for this session's writes that follow, as
        :meth:`generation` keeps its own read: a directory found unmade is made at its first write without
        being read again (making it again is harmless: the row is its key alone, the markers plain writes)."""
        return self._listed(directory, recorded_generation(self._session, self._st, directory))

    def listed_many(self, directories: Sequence[str]) -> dict[str, int | None]:
        """:meth:`listed` of each of ``directories``, their rows read ``GENERATIONS_A_READ`` a request."""
        found: dict[str, int | None] = {}
        for start in range(0, len(directories), GENERATIONS_A_READ):
            for directory, generation in recorded_generations(self._session, self._st,
                                                              directories[start:start + GENERATIONS_A_READ]).items():
                found[directory] = self._listed(directory, generation)
        return found

    def make_many(self, directories: Sequence[str]) -> None:
        """Make those of ``directories`` that :meth:`listed` found unmade, together: every marker first, then, once
        all are acknowledged, the directories' rows; many rows to an unlogged batch
        (:func:`~casstor_ops.store.cql.request_queue.row_batches`), all of a step's requests at once. Threads that need
        one of them meanwhile wait for it, as for a directory made at its first write.

        A directory is taken with those above it not made yet, up to one that is made, so every row is written
        after the markers of its whole path; one whose path meets a directory another thread makes is left to its
        first write (this call waits for the parents being made first, holding none of its own: no two calls wait
        for each other).

        Failures: the driver's error is raised; the directories it leaves unmade are made at their first write,
        without a read (making one twice is harmless: the row is its key alone, the markers plain writes).
        """
        with self._guard:
            parents = [self._making[p] for p in {_parent(d) for d in directories if d} if p in self._making]
        wait(parents)
        claimed = self._claim(directories)
        try:
            rows = [self._directory_row(d) for d in claimed]
            for writes in (self._markers_of(claimed), rows):  # every marker acknowledged before any row
                self._write_all(query_batches(writes))
            for directory, made in claimed.items():
                self._remember(directory, 0)
                made.set_result(0)
        except BaseException as err:
            unmade = [d for d, made in claimed.items() if not made.done()]
            with self._guard:
                self._unmade.update(unmade)  # each made at its first write, as found by the read, unread again
            for directory in unmade:
                claimed[directory].set_exception(err)
            raise
        finally:
            with self._guard:
                for directory in claimed:
                    del self._making[directory]

    def _claim(self, directories: Sequence[str]) -> dict[str, Future]:
        """Take for :meth:`make_many` each of ``directories`` found unmade that no thread makes, with the directories
        above it that are so too (a read-ahead's parents not made yet), when the first directory above those is
        made (its generation known) or taken here: else none of them."""
        claimed: dict[str, Future] = {}
        with self._guard:
            for directory in dict.fromkeys(directories):
                path, above = [], directory
                while (above is not None and above not in claimed and above in self._unmade
                       and above not in self._making):
                    path.append(above)
                    above = _parent(above) if above else None
                if path and (above is None or above in claimed or above in self._generations):
                    for taken in path:
                        claimed[taken] = self._making[taken] = Future()
                        self._unmade.discard(taken)
        return claimed

    def _markers_of(self, claimed: dict[str, Future]) -> list[Query]:
        """The marker writes of the directories ``claimed``: a parent taken with them is new (generation 0), any
        other is made (its generation as cached)."""
        return [self._marker(d, lambda parent: 0 if parent in claimed else self.generation(parent))
                for d in claimed if d]

    def _write_all(self, batches: list[list[Query]]) -> None:
        """Send every batch of writes at once (an unlogged batch each, a lone write as
        itself), then wait for all of them; the first error is raised."""
        sent = [self._session.execute_async(*writes[0]) if len(writes) == 1 else
                self._session.execute_async(unlogged_batch(writes)) for writes in batches]
        for future in sent:
            future.result()

    def _listed(self, directory: str, generation: int | None) -> int | None:
        """Keep what :meth:`listed` read of ``directory`` (its generation, or None: no row) for the writes."""
        if generation is None:
            with self._guard:
                if len(self._unmade) >= _CACHED_DIRECTORIES:
                    self._unmade.clear()
                self._unmade.add(directory)
            return None
        self._remember(directory, generation)
        return generation

    def _remember(self, directory: str, generation: int) -> None:
        with self._guard:
            if len(self._generations) >= _CACHED_DIRECTORIES:
                self._generations.clear()
            self._generations[directory] = (generation, time.monotonic())

    def _make(self, directory: str) -> None:
        """Markers from the parent down, then the directory's row: a row found means its markers are there."""
        if directory:
            self._session.execute(*self._marker(directory, self.generation))
        self._session.execute(*self._directory_row(directory))

    def _directory_row(self, directory: str) -> Query:
        """The write of ``directory``'s own row (written after its markers: a row found means they are there)."""
        return Query(self._st.make_directory, (directory_key(directory),))

    def _marker(self, directory: str, generation: Callable[[str], int]) -> Query:
        """The write of ``directory``'s marker in its parent, of the parent's ``generation``."""
        parent, name = markers(directory)[-1]
        return Query(self._st.insert_marker, (directory_key(parent), bucket_of(name, generation(parent)), name))

    def publish(self, info: FileInfo, stored_size: int | None = None, deleted: bool = False) -> None:
        """Write the entry of the version ``info`` (a delete marker when ``deleted``), stamped with its time."""
        directory = split_id(info.id)[0]
        generation = self.generation(directory)
        bucket, values = _entry(info, generation, stored_size, deleted)
        self._session.execute(self._st.insert_entry, values)
        self._maybe_split(directory, bucket, generation)

    def publish_async(self, info: FileInfo, stored_size: int | None, done: Callable[[Exception | None], None]) -> None:
        """:meth:`publish` without waiting: ``done(None)`` or ``done(error)`` once, on a driver or pool thread."""
        directory = split_id(info.id)[0]
        cached = self._generations.get(directory)
        if cached is None or time.monotonic() - cached[1] >= GENERATION_CACHE_S or self._rows <= SPLIT_CHECKS:
            future: Future = self._cold.submit(self.publish, info, stored_size)
            future.add_done_callback(lambda f: done(f.exception()))
            return
        bucket, values = _entry(info, cached[0], stored_size, False)
        written = self._session.execute_async(self._st.insert_entry, values)
        written.add_callbacks(lambda _rows: self._after_async(directory, bucket, cached[0], done),
                              lambda error: done(error))

    def _after_async(self, directory: str, bucket: int, generation: int,
                     done: Callable[[Exception | None], None]) -> None:
        done(None)
        if random.random() * self._rows >= SPLIT_CHECKS:  # sampled here once: _split_if_full does not sample again
            return
        with self._guard:
            if (directory, bucket) in self._checking:
                return
            self._checking.add((directory, bucket))
        self._cold.submit(self._checked_once, directory, bucket, generation)

    def _checked_once(self, directory: str, bucket: int, generation: int) -> None:
        try:
            self._split_if_full(directory, bucket, generation)
        finally:
            with self._guard:
                self._checking.discard((directory, bucket))

    def publish_many(self, infos: dict[str, list[tuple[FileInfo, int | None]]], deleted: bool = False) -> None:
        """Write the entries of the versions ``infos`` holds by directory (each with its stored size; delete markers
        when ``deleted``), each stamped with its own version's time: many directories' entries to an unlogged batch
        (:func:`~casstor_ops.store.cql.request_queue.query_batches`), every batch sent at once."""
        writes: list[Query] = []
        written: Counter[tuple[str, int, int]] = Counter()
        for directory, files in infos.items():
            generation = self.generation(directory)
            for info, stored_size in files:
                bucket, values = _entry(info, generation, stored_size, deleted)
                writes.append(Query(self._st.insert_entry, values))
                written[directory, bucket, generation] += 1
        self._write_all(query_batches(writes))
        for (directory, bucket, generation), count in written.items():
            self._maybe_split(directory, bucket, generation, count)

    def withdrawal(self, file_id: str, micros: int) -> Query:
        """The request that deletes the ID's entry from every bucket it may be in, as of
        ``micros`` (a newer entry survives)."""
        directory, name = split_id(file_id)
        generation = self.generation(directory)
        return Query(self._st.delete_entry_at, (micros, directory_key(directory), _buckets_of(name, generation), name))

    def supersede(self, file_id: str, dropped: uuid.UUID, head: FileInfo | None, deleted: bool = False,
                  stored_size: int | None = None) -> None:
        """Rewrite the ID's entry after its newest version ``dropped`` was dropped: to summarise ``head`` (a delete
        marker when ``deleted``), or gone (None). An older version's time would lose to the entry it replaces, so
        the rewrite is stamped just after the later of ``dropped``'s time and the entry's own write: a version
        stored after that still wins."""
        directory, name = split_id(file_id)
        generation = self.generation(directory)
        every = _buckets_of(name, generation)
        rows = self._session.execute(self._st.entry_written, (directory_key(directory), every, name))
        stamp = max([version_micros(dropped), *(row.written for row in rows if row.written is not None)]) + 1
        self._session.execute(self._st.delete_entry_at, (stamp, directory_key(directory), every, name))
        if head is not None:
            _, values = _entry(head, generation, stored_size, deleted)
            self._session.execute(self._st.insert_entry, (*values[:-1], stamp + 1))

    def _maybe_split(self, directory: str, bucket: int, generation: int, written: int = 1) -> None:
        """One write in ``directory_rows / SPLIT_CHECKS`` (of ``written`` entries): move the directory on if
        ``bucket`` is full."""
        if random.random() * self._rows < SPLIT_CHECKS * written:
            self._split_if_full(directory, bucket, generation)

    def _split_if_full(self, directory: str, bucket: int, generation: int) -> None:
        """Count ``bucket`` and move the directory to the next generation if it holds the bound."""
        if generation >= MAX_GENERATION:
            return
        count = self._session.execute(self._st.bucket_rows, (directory_key(directory), bucket)).one()[0]
        if count < self._rows:
            return
        # Generation 0 is no cell (the row a directory is made with has none): IF generation = null.
        applied = self._session.execute(self._st.split_directory,
                                        (generation + 1, directory_key(directory), generation or None)).one()[0]
        current = generation + 1 if applied else recorded_generation(self._session, self._st, directory) or 0
        self._remember(directory, current)


class BatchedEntries:
    """The entries of a tree store's committed versions, written by directory on writer threads of their own: a
    directory's entries wait until ``files`` of them are committed, until more than ``open_directories``
    directories wait (then the older half go together: files come in path order, so they are most likely done),
    or until :meth:`flush`; then they go many directories to a request (:meth:`Namespace.publish_many`).
    Thread-safe; a drop-in for :meth:`Namespace.publish` in a commit, which it never holds up on a write.

    Each version row is still written (the commit point) before its entry is queued, so the order of
    ``docs/safety.md`` holds per batch; a store killed before a flush leaves versions committed but not listed
    (or listed as their previous version) until the next store of the tree writes their entries. A directory
    written in two parts is harmless: each entry carries its own version's time.
    """

    def __init__(self, namespace: Namespace, files: int = ENTRY_BATCH_FILES,
                 open_directories: int = OPEN_DIRECTORIES) -> None:
        self._namespace = namespace
        self._files = files
        self._open = open_directories
        self._waiting: dict[str, list[tuple[FileInfo, int | None]]] = {}  # in the order directories came
        self._guard = threading.Lock()
        self._writers: ThreadPoolExecutor | None = None
        self._written: set[Future] = set()  # the writes under way, and those that failed (raised by flush)

    def publish(self, info: FileInfo, stored_size: int | None = None) -> None:
        """Queue the entry of the committed version ``info``; hand the directories that are due to a writer."""
        directory = split_id(info.id)[0]
        with self._guard:
            waiting = self._waiting.setdefault(directory, [])
            waiting.append((info, stored_size))
            if len(waiting) >= self._files:
                self._write({directory: self._waiting.pop(directory)})
            if len(self._waiting) > self._open:
                older = list(self._waiting)[:len(self._waiting) - self._open // 2]
                self._write({d: self._waiting.pop(d) for d in older})

    def flush(self) -> None:
        """Write every queued entry and wait for every write handed over; raise the first that failed."""
        with self._guard:
            due, self._waiting = self._waiting, {}
            alone = self._writers is None  # nothing handed over (put_many's one batch): no thread
            if due and not alone:
                self._write(due)
            written, self._written = list(self._written), set()
            writers, self._writers = self._writers, None
        if alone and due:
            self._namespace.publish_many(due)
        wait(written)
        if writers is not None:
            writers.shutdown()
        for future in written:
            future.result()

    def _write(self, infos: dict[str, list[tuple[FileInfo, int | None]]]) -> None:
        """Hand these directories' entries to a writer (under the guard)."""
        if self._writers is None:
            self._writers = ThreadPoolExecutor(ENTRY_WRITERS, thread_name_prefix="casstor-entries")
        written = self._writers.submit(self._namespace.publish_many, infos)
        self._written.add(written)
        # Forgotten as it ends well, so a tree of many directories holds no more than the writes under way and the
        # failed ones. Not under the guard (the callback may run here, with the guard held): a set's discard, and
        # flush's copy of the set, each run whole under the GIL (a Future hashes by identity: no Python code
        # runs). The list this replaced was filtered on every hand-over, under the guard every committing thread
        # takes: it held 368 writes on average for the bench's small tree (307,643 Future.done calls for 835
        # directories), as the writers trail the workers; no time gain was measurable at that size.
        written.add_done_callback(self._forget)

    def _forget(self, written: Future) -> None:
        if not written.cancelled() and written.exception() is None:
            self._written.discard(written)


def _entry(info: FileInfo, generation: int, stored_size: int | None, deleted: bool) -> tuple[int, tuple]:
    """The bucket of ``info``'s entry in a directory of ``generation``, and the values of ``insert_entry``."""
    directory, name = split_id(info.id)
    bucket = bucket_of(name, generation)
    return bucket, (directory_key(directory), bucket, name, *entry_row(info, stored_size, deleted),
                    version_micros(info.version))


def _parent(directory: str) -> str:
    """The directory that holds ``directory``'s marker (``directory`` not the root)."""
    return markers(directory)[-1][0]


def _buckets_of(name: str, generation: int) -> list[int]:
    """The one bucket per generation so far where ``name`` may have an entry."""
    return sorted({bucket_of(name, g) for g in range(generation + 1)})

