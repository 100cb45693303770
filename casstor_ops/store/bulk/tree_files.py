"""One file of a tree: store it unless unchanged, or restore it below a directory.

The per-file work of every whole-tree command, whichever runner drives it:
``casstor store DIR PREFIX`` / ``casstor restore PREFIX DIR`` in one
process (:mod:`casstor_ops.store.bulk.tree`) and the Spark jobs
(:mod:`casstor_ops.spark.bulk_ingest`, :mod:`casstor_ops.spark.bulk_restore`).
Each fills a *result row* (a dict: ``bytes``, ``blocks``, ``new_blocks``,
``new_bytes``, ``new_stored_bytes``, ``status``) and raises for a file
that fails; the runner records :data:`FILE_ERRORS` as that file's status
(:func:`failure_status`) and :func:`one_line` error and goes on, stops
when every file meets an :func:`outage`, and exits with :func:`exit_status`.

* **Skip unchanged**: a file whose ID is already committed with the same
  size, mode, mtime and content hash is ``skipped`` (no block, block list
  or head is written). A tree store (``listed``: :class:`ListedHeads`)
  first compares the file's ``stat`` with its directory's entries, read
  once per directory: a file whose size, mode and mtime match AND whose
  inode and change time are those recorded when its head was stored is
  skipped without being opened. That is restic's and borg's trust model:
  mtime alone can be set back (``touch -d``, ``cp -p``), but the change time
  cannot be set by a user and moves on every write, chmod or rename, and a
  file replaced by another gets another inode; what it does not catch is
  a change made with the clock set back, or content altered below the file
  system (a disk editor), which restic and borg do not catch either. A file
  changed within ``RACY_CTIME_NS`` of being opened records no inode and
  change time. Any other file (nothing recorded, a store made before these
  columns, or a change time that moved) is read and hashed against its
  head, as before; the hash is the one the head row records, so size +
  mtime alone is never trusted. Found unchanged that way, its entry is
  written again if the listing misses it or names another version (what a
  store killed between a version and its batched entry leaves).
* **Small files in batches**: :func:`store_small_files` applies the same
  rules to many small local files, each read whole into memory, and stores
  those not found unchanged as one batch
  (:mod:`casstor_ops.store.engine.batch_upload`); a file that fails (vanished,
  unreadable, no longer regular) fails alone.
* **Restore below a directory**: the file ID (the Spark job's whole ID;
  ``casstor restore PREFIX/ DIR`` takes PREFIX off, as ``casstor store DIR
  PREFIX`` put it on) is turned back into a path
  (:func:`~casstor_ops.store.trees.path_ids.id_to_path`) under the destination;
  an ID that would escape it (``..``, absolute) is refused.
* **URLs**: given the source's or destination's fsspec filesystem (``fs``),
  a file is read from, or restored to, that filesystem
  (:mod:`casstor_ops.store.trees.locations`) by the same rules; such a file
  records no mode or mtime (an object has none to give).

Example::

    >>> row = {}
    >>> store_unless_unchanged(store, entry, row, lease)        # doctest: +SKIP
    >>> row["status"]                                           # doctest: +SKIP
    'skipped'

Failures: a file that vanished, cannot be read, is no longer a regular file
(a FIFO swapped in is refused, never read; so is a symlink, opened with
``O_NOFOLLOW`` unless following them), or is larger than
``max_file_bytes``, and any store error, raise
:class:`~casstor_ops.errors.CasstorError` (or the driver's error) for the
runner to record.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import threading
import uuid
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterable, Iterator, Sequence

from cassandra import DriverException
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionBusy, ConnectionException

from casstor_ops.cluster.connection import Endpoint, connect_error
from casstor_ops.errors import (EXIT_CORRUPT, EXIT_PARTIAL, EXIT_UNREACHABLE, EXIT_USAGE, CasstorError, CorruptionError,
                                LeaseLapsedError)
from casstor_ops.store.api import FileInfo, SmallFile, Store, StoreResult, check_id, open_source
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.upload import source_file_hash
from casstor_ops.store.namespace.entries import BatchedEntries
from casstor_ops.store.namespace.layout import markers, split_id
from casstor_ops.store.namespace.listing import UNSPLIT_A_READ, Entry, live_entries
from casstor_ops.store.records import FileAttributes
from casstor_ops.store.trees.locations import open_reader, replacing_writer
from casstor_ops.store.trees.path_ids import id_to_path, path_to_id
from casstor_ops.store.trees.source_listing import UNKNOWN_SIZE, SourceFile

if TYPE_CHECKING:  # fsspec loads only for URLs (casstor_ops.store.trees.locations)
    from fsspec.spec import AbstractFileSystem

STORED, SKIPPED, RESTORED, FAILED, CORRUPT = "stored", "skipped", "restored", "failed", "corrupt"
INGEST_STATUSES = (STORED, SKIPPED, FAILED)
RESTORE_STATUSES = (RESTORED, FAILED, CORRUPT)
NEW_COUNTS = ("new_blocks", "new_bytes", "new_stored_bytes")  # what a store of the tree added to the store
VANISHED = "no such file (vanished since the listing)"
# Reads a tree store keeps in flight ahead of its workers (ListedHeads' threads). Chosen when each directory was
# a read of its own (the bench's small tree: 5,626 files, 790 directories with files): 16 against 4, 8 alternated
# pairs on one warm node, unchanged re-run 1.04 -> 0.95 s (medians; faster in 7 of 8); 8 and 32 fell between or level.
READ_AHEAD = 16
# Errors that belong to one file; anything else is a bug and fails the job with its traceback.
# NoHostAvailable and the connection errors are no DriverException: they reach here once the store's
# request queue has used up its retries.
FILE_ERRORS = (CasstorError, OSError, DriverException, NoHostAvailable, ConnectionException, ConnectionBusy)


def one_line(err: BaseException) -> str:
    """An error as the one line a result row keeps: an OSError's own text (no errno, no path), else its message.

    Example::

        >>> one_line(PermissionError(13, "Permission denied", "/data/x"))
        'Permission denied'
    """
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    if isinstance(err, NoHostAvailable) and err.args:  # its str() is the repr of its arguments
        causes = "; ".join(f"{host}: {one_line(cause)}" for host, cause in err.errors.items())
        return f"NoHostAvailable: {err.args[0]}" + (f" ({causes})" if causes else "")
    return " ".join(str(err).split()) or type(err).__name__


def outage(err: BaseException | None, endpoint: Endpoint) -> CasstorError | None:
    """The one-line error when ``err`` says no Cassandra host could be reached at all, else None.

    A busy connection, a timeout or a refused request are the item's own
    failure; refused, reset or unresolvable connections to every host, or a
    store that could not connect, are the cluster's.

    Example::

        >>> outage(NoHostAvailable("Unable to connect", {"h:9042": ConnectionRefusedError(111, "refused")}),
        ...        endpoint).exit_code                                             # doctest: +SKIP
        6
    """
    if isinstance(err, CasstorError):
        found = err
    elif isinstance(err, (NoHostAvailable, ConnectionException)):
        found = connect_error(err, endpoint)
    else:
        return None
    return found if found is not None and found.exit_code == EXIT_UNREACHABLE else None


def failure_status(err: BaseException) -> str:
    """The status of a file that failed with one of :data:`FILE_ERRORS`: ``corrupt`` for a missing or damaged
    block, else ``failed``."""
    return CORRUPT if isinstance(err, CorruptionError) else FAILED


def exit_status(statuses: set[str]) -> int:
    """0 when every file succeeded; EXIT_CORRUPT if a restore met corruption, else EXIT_PARTIAL if one failed."""
    if CORRUPT in statuses:
        return EXIT_CORRUPT
    return EXIT_PARTIAL if FAILED in statuses else 0


def _head(store: Store, file_id: str) -> FileInfo | None:
    try:
        return store.stat(file_id)
    except CasstorError:  # not committed yet
        return None


def summary_line(what: str, summary: dict[str, Any]) -> str:
    """One line of a tree's totals (files, bytes, the count of each status, and for a store :data:`NEW_COUNTS`),
    for the tree commands and the Spark jobs alike.

    Example::

        >>> summary_line("ingest", {"files": 3, "bytes": 2_500_000, "stored": 2, "skipped": 1, "failed": 0,
        ...                         "new_blocks": 40, "new_bytes": 2_000_000, "new_stored_bytes": 500_000})
        'ingest: 3 files, 2.5 MB: 2 stored, 1 skipped, 0 failed; 2.0 MB new in 40 new blocks, 0.5 MB as stored'
    """
    statuses = ", ".join(f"{summary[s]} {s}" for s in (STORED, SKIPPED, RESTORED, FAILED, CORRUPT) if s in summary)
    line = f"{what}: {summary['files']} files, {summary['bytes'] / 1e6:.1f} MB: {statuses}"
    if "new_bytes" in summary:
        line += (f"; {summary['new_bytes'] / 1e6:.1f} MB new in {summary['new_blocks']} new blocks, "
                 f"{summary['new_stored_bytes'] / 1e6:.1f} MB as stored")
    return line


def check_prefix(prefix: str) -> str:
    """``prefix`` if the IDs it starts are valid by the store's own rules (``check_id``); else one line, exit 2.

    Example::

        >>> check_prefix("photos/")
        'photos/'
        >>> check_prefix("/abs/")                                         # doctest: +SKIP
        CasstorError: prefix '/abs/' cannot start a file ID: file ID '/abs/x': empty, '.' and '..' ...

    Checked before any file is listed, so a bad prefix is one error, not one failed row per file.
    """
    try:
        check_id(path_to_id(prefix) + "x", storing=True)  # "x": any valid name that could follow it
    except CasstorError as err:
        raise CasstorError(f"prefix {prefix!r} cannot start a file ID: {err}", EXIT_USAGE) from None
    return prefix


@contextlib.contextmanager
def _opened(entry: SourceFile, fs: AbstractFileSystem | None, follow_symlinks: bool
            ) -> Iterator[tuple[int, BinaryIO, FileAttributes | None]]:
    """The size, a reader and the attributes of a listed file: a local path, or a path on ``fs``."""
    if fs is not None:
        with open_reader(fs, entry.path) as reader:
            yield reader.size, reader, None
        return
    # FileNotFoundError before open_source makes it a one-line error.
    size = os.stat(entry.path, follow_symlinks=follow_symlinks).st_size
    # Opened as a store opens it, so a FIFO swapped in after the listing is refused here instead of blocking,
    # and (O_NOFOLLOW) so is a symlink, instead of being followed out of the tree.
    with open_source(entry.path, follow_symlinks) as (reader, attributes):
        yield size, reader, attributes


class ListedHeads:
    """The files of a tree as the directory index lists them (newest versions, with the source's inode and change
    time when recorded), read once per directory, the last ``kept`` directories kept; and the entries to write
    again (:meth:`relist`). Thread-safe: a directory is read by the first file that asks, or ahead of the workers
    (:meth:`prefetch`, ``UNSPLIT_A_READ`` unsplit directories a request) by ``ahead`` threads of its own
    (:meth:`close` stops them). Each read gives its directories' names by directory. ``on_read`` is called the
    first time a file is found not listed unchanged (:meth:`reading`). A directory not made yet is not
    read past its row (it has no entry), and its generation read is kept for the writes of its entries
    (:meth:`Namespace.listed <casstor_ops.store.namespace.entries.Namespace.listed>`).

    Example: ``ListedHeads(store, entries).get("src/a.py").file.size`` -> ``1200``.
    """

    def __init__(self, store: Store, entries: BatchedEntries, kept: int = 1024, ahead: int = READ_AHEAD,
                 on_read: Callable[[], None] | None = None) -> None:
        self._on_read = on_read
        self._session, self._st = store.session, Statements.for_session(store.session)
        self._namespace = store.namespace
        self._entries = entries
        self._kept = kept
        self._directories: OrderedDict[str, Future] = OrderedDict()
        self._parents_read: set[str] = set()
        self._guard = threading.Lock()
        self._reads = ThreadPoolExecutor(ahead, thread_name_prefix="casstor-listed")

    def prefetch(self, file_ids: Iterable[str]) -> None:
        """Start reading the directories of ``file_ids`` (those not read or being read) without waiting: their
        generations in one request (:meth:`Namespace.listed_many`), with their parents' not read before, then
        their entries, ``UNSPLIT_A_READ`` directories a read (the unchanged re-run of bench.small_files's tree
        went 0.94 -> 0.63 s so, from one read a directory: medians of 6 alternated pairs; node CPU 0.37 -> 0.15 s)."""
        with self._guard:
            new = [d for d in dict.fromkeys(split_id(file_id)[0] for file_id in file_ids)
                   if not self._readable(self._directories.get(d))]
            if not new:
                return
            # The generations' read goes first in the queue: no thread waits for one not started yet.
            generations = self._reads.submit(self._namespace.listed_many, new + self._parents_of(new))
            self._reads.submit(self._make_unmade, generations)
            for start in range(0, len(new), UNSPLIT_A_READ):
                group = new[start:start + UNSPLIT_A_READ]
                read = self._reads.submit(self._entries_after, group, generations)
                for directory in group:
                    self._keep(directory, read)

    def _parents_of(self, directories: list[str]) -> list[str]:
        """The directories above ``directories`` whose rows were not read yet (under the guard). A new directory
        is made under its parent, whose generation names the marker's bucket: read here with the others, not one
        request each at the first write (606 of the 9,992 requests of a first store of the bench's small tree)."""
        if len(self._parents_read) > self._kept:
            self._parents_read.clear()
        listed = set(directories)
        parents = [parent for directory in directories for parent, _ in markers(directory)
                   if parent not in listed and parent not in self._parents_read and parent not in self._directories]
        self._parents_read.update(parents)
        return list(dict.fromkeys(parents))

    def reading(self) -> None:
        """A file of the tree is not listed unchanged: it will be read. Calls ``on_read`` the first time."""
        on_read, self._on_read = self._on_read, None
        if on_read is not None:
            on_read()

    def close(self) -> None:
        """Stop the reads ahead not started yet."""
        self._reads.shutdown(wait=False, cancel_futures=True)

    def get(self, file_id: str) -> Entry | None:
        """The listed entry of ``file_id`` (None: not listed, or removed)."""
        directory, name = split_id(file_id)
        return self._read(directory).result()[directory].get(name)

    def _read(self, directory: str) -> Future:
        with self._guard:  # one read a directory (again after a failure): the other workers wait for the same one
            found = self._directories.get(directory)
            if not self._readable(found):
                found = self._keep(directory, self._reads.submit(self._names, directory))
            self._directories.move_to_end(directory)
            return found

    @staticmethod
    def _readable(found: Future | None) -> bool:
        """Whether a directory's read (None: none) gives or will give its names: not cancelled, not failed."""
        return found is not None and not found.cancelled() and not (found.done() and found.exception() is not None)

    def _keep(self, directory: str, read: Future) -> Future:
        self._directories[directory] = read
        self._directories.move_to_end(directory)
        if len(self._directories) > self._kept:
            self._directories.popitem(last=False)
        return read

    def _names(self, directory: str) -> dict[str, dict[str, Entry]]:
        return self._files_of({directory: self._namespace.listed(directory)})

    def _make_unmade(self, generations: Future) -> None:
        """Make together the directories ``generations`` found unmade (:meth:`Namespace.make_many`), ahead of their
        first entries. Its error is not raised here: each directory it left unmade is made by its first write,
        which raises if the cluster still fails."""
        self._namespace.make_many([d for d, generation in generations.result().items() if generation is None])

    def _entries_after(self, directories: list[str], generations: Future) -> dict[str, dict[str, Entry]]:
        """The names of ``directories`` once ``generations`` has read theirs: the unsplit ones in one request."""
        recorded = generations.result()
        return self._files_of({d: recorded[d] for d in directories})

    def _files_of(self, generations: dict[str, int | None]) -> dict[str, dict[str, Entry]]:
        """Each directory's files by name (:func:`~casstor_ops.store.namespace.listing.live_entries`)."""
        return {d: {e.name: e for e in entries if e.file}
                for d, entries in live_entries(self._session, self._st, generations).items()}

    def as_listed(self, file_id: str, size: int, attributes: FileAttributes | None) -> bool:
        """Whether ``file_id`` is listed with this size and these attributes: only then may it be unchanged. The
        listing names the head, or a version older than the head that a killed store left: a file that differs
        from it is stored (again, at worst: its blocks are found, none uploaded) without reading the head."""
        listed = self.get(file_id)
        return listed is not None and listed.file.size == size and listed.file.attributes == attributes

    def relist(self, head: FileInfo, attributes: FileAttributes | None) -> None:
        """Write the entry of ``head`` (found unchanged by its hash, ``attributes`` the source's now) if the listing
        misses it or names another version: what a store killed between a version and its entry left."""
        listed = self.get(head.id)
        if listed is None or listed.file.version != head.version:
            stored_size = len(head.inline.payload) if head.inline is not None else None
            self._entries.publish(replace(head, attributes=attributes or head.attributes), stored_size)


def _unchanged_since_listed(listed: ListedHeads, entry: SourceFile, follow_symlinks: bool) -> FileInfo | None:
    """The listed head of a local file untouched since that head was stored from it (same size, mode, mtime,
    inode and change time: :meth:`FileAttributes.unchanged`), else None."""
    known = listed.get(entry.file_id)
    if known is None or known.file.attributes is None:
        return None
    try:
        status = os.stat(entry.path, follow_symlinks=follow_symlinks)
    except OSError:  # the store's own open reports it
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_size != known.file.size \
            or not known.file.attributes.unchanged(status):
        return None
    return known.file


def store_unless_unchanged(store: Store, entry: SourceFile, row: dict[str, Any], lease: WriterLease,
                           max_file_bytes: int | None = None, fs: AbstractFileSystem | None = None,
                           follow_symlinks: bool = False, listed: ListedHeads | None = None) -> None:
    """Store one listed file unless it is already committed unchanged; ``lease`` fences its head write.

    ``fs``: the filesystem of a URL source (``entry.path`` is then a URL on it), None for a local path.
    ``follow_symlinks``: open a local path that is a symlink as its target (else it fails: never followed).
    ``listed``: the tree's heads as listed, to skip a local file untouched since its head without reading it
    and to write an entry the listing misses (a tree store's; without it the head is read and the file hashed).
    An entry the listing marked ``skipped`` is that row's status, its reason the row's ``error``.
    """
    if _skipped_unread(entry, row, listed, fs, follow_symlinks, max_file_bytes):
        return
    with _vanished(entry), _opened(entry, fs, follow_symlinks) as (size, reader, attributes):
        row["bytes"] = size
        if max_file_bytes is not None and size > max_file_bytes:
            raise CasstorError(f"{size} bytes: larger than the limit of {max_file_bytes} bytes")
        if _unchanged_by_hash(store, entry.file_id, size, attributes, reader, row, listed):
            return
        reader.seek(0)
        _stored(row, store.put(reader, entry.file_id, lease=lease, attributes=attributes))


def store_small_files(store: Store, entries: Sequence[SourceFile], rows: Sequence[dict[str, Any]],
                      lease: WriterLease, follow_symlinks: bool = False, listed: ListedHeads | None = None
                      ) -> list[BaseException | None]:
    """:func:`store_unless_unchanged` for small local files (each read whole into memory), those not found
    unchanged stored as one batch (:meth:`Store.put_many <casstor_ops.store.api.Store.put_many>`): each row filled
    as that function fills it; for each file, the error that failed it (:data:`FILE_ERRORS`, for the runner to
    record) or None. A lapsed lease raises."""
    errors: list[BaseException | None] = [None] * len(entries)
    batch: list[tuple[int, SmallFile]] = []
    for n, (entry, row) in enumerate(zip(entries, rows)):
        try:
            if _skipped_unread(entry, row, listed, None, follow_symlinks, None):
                continue
            with _vanished(entry), _opened(entry, None, follow_symlinks) as (_, reader, attributes):
                data = reader.read()
            row["bytes"] = len(data)
            if not _unchanged_by_hash(store, entry.file_id, len(data), attributes, io.BytesIO(data), row, listed):
                batch.append((n, SmallFile(entry.file_id, data, attributes)))
        except LeaseLapsedError:
            raise
        except FILE_ERRORS as err:
            errors[n] = err
    for (n, _), result in zip(batch, store.put_many([small for _, small in batch], lease=lease)):
        if isinstance(result, LeaseLapsedError):
            raise result
        if isinstance(result, BaseException):
            errors[n] = result
        else:
            _stored(rows[n], result)
    return errors


def _skipped_unread(entry: SourceFile, row: dict[str, Any], listed: ListedHeads | None,
                    fs: AbstractFileSystem | None, follow_symlinks: bool, max_file_bytes: int | None) -> bool:
    """Whether the listing decided the row without reading the file: marked ``skipped``, or a local file untouched
    since its listed head (the row then says so). A path that failed to list raises its error."""
    if entry.error:
        raise CasstorError(entry.error)
    if entry.skipped:
        row.update(status=SKIPPED, error=entry.skipped)
        return True
    known = _unchanged_since_listed(listed, entry, follow_symlinks) if listed is not None and fs is None else None
    if known is not None and (max_file_bytes is None or known.size <= max_file_bytes):
        row.update(bytes=known.size, blocks=known.blocks, status=SKIPPED)
        return True
    if listed is not None:
        listed.reading()
    return False


def _unchanged_by_hash(store: Store, file_id: str, size: int, attributes: FileAttributes | None, reader: BinaryIO,
                       row: dict[str, Any], listed: ListedHeads | None) -> bool:
    """Whether the file read by ``reader`` is its head unchanged (same size, attributes and content hash): the row
    then says ``skipped``, and its entry is written again if the listing misses it. A chmod or touch alone is a
    change too: the head must carry the source's mode and mtime. A file the listing shows with another size or
    attributes is not compared (no head read)."""
    if listed is not None and not listed.as_listed(file_id, size, attributes):
        return False
    head = _head(store, file_id)
    if head is None or head.size != size or head.attributes != attributes \
            or source_file_hash(reader, store.settings) != head.hash:
        return False
    row.update(blocks=head.blocks, status=SKIPPED)
    if listed is not None:
        listed.relist(head, attributes)
    return True


def _stored(row: dict[str, Any], result: StoreResult) -> None:
    row.update(bytes=result.bytes, blocks=result.blocks, new_blocks=result.new_blocks, new_bytes=result.new_bytes,
               new_stored_bytes=result.new_stored_bytes, status=STORED)


@contextlib.contextmanager
def _vanished(entry: SourceFile) -> Iterator[None]:
    """A file not found is one that vanished since its listing (a listed size says it existed then; an explicit
    path may never have)."""
    try:
        yield
    except FileNotFoundError:
        raise CasstorError(VANISHED if entry.size != UNKNOWN_SIZE else "no such file") from None


def restore_target(dest_dir: str, file_id: str, below: str = "") -> str:
    """``dest_dir/<the id's path>`` (:func:`~casstor_ops.store.trees.path_ids.id_to_path`), the prefix ``below`` (which
    the id starts with) taken off; escaping ids are refused."""
    relative = file_id[len(below):]
    parts = PurePosixPath(id_to_path(relative)).parts
    if not parts or relative.startswith("/") or any(p in ("..", ".") for p in parts):
        raise CasstorError(f"id {file_id!r} is not a relative path: refusing to restore it outside {dest_dir}")
    return os.path.join(dest_dir, *parts)


def restore_below(store: Store, dest_dir: str, file_id: str, row: dict[str, Any], force: bool = False,
                  below: str = "", fs: AbstractFileSystem | None = None, version: uuid.UUID | None = None,
                  at: datetime | None = None, head: FileInfo | None = None) -> None:
    """Restore ``file_id`` to :func:`restore_target` (directories made as needed), verified.

    ``fs``: the filesystem of a URL destination (``dest_dir`` is then a path on it), None for a local one.
    ``head``: the version to restore, as a listing found it (:func:`listed_files`; not read again); else
    ``version``: that version of the file (:func:`files_to_restore` found it as of ``at``); else, with ``at``, the
    version it had then (none: the store's NotFoundError); else its head.
    """
    target = restore_target(dest_dir, file_id, below)
    if head is None and (version is not None or at is not None):
        head = store.stat(file_id, version=version, at=at)
    if fs is not None:
        row["path"] = fs.unstrip_protocol(target)
        with replacing_writer(fs, target, force) as out:
            result = store.restore(file_id, out, head=head)
    else:
        row["path"] = path_to_id(target)  # text: an undecodable name shown escaped, as in its ID
        os.makedirs(os.path.dirname(target), exist_ok=True)
        result = store.restore(file_id, target, force=force, head=head)
    row.update(bytes=result.bytes, blocks=result.blocks, status=RESTORED)


def listed_files(store: Store, prefix: str, at: datetime | None = None) -> list[FileInfo]:
    """The versions of the files under ``prefix`` as listed (now, or as of ``at``); CasstorError when there is
    none."""
    found = store.list_all(prefix) if at is None else list(store.list(prefix, at=at))
    if not found:
        then = f" at {at.isoformat()}" if at is not None else ""
        raise CasstorError(f"no file in the store has an id starting with {prefix!r}{then}")
    return found


def files_to_restore(store: Store, prefix_or_ids: str | Sequence[str], at: datetime | None = None
                     ) -> list[tuple[str, int, uuid.UUID | None]]:
    """``(id, size, version)`` of every committed file under a prefix, or of each listed ID (size 0 when unknown:
    its restore then reports the store's own error); CasstorError when there is nothing to restore.

    ``at``: the files as they were then, each with the version it had (restored exactly, whatever was stored
    since); without it the version is None (each file's head when it is restored).
    """
    pinned = (lambda info: info.version) if at is not None else (lambda info: None)
    if isinstance(prefix_or_ids, str):
        return [(info.id, info.size, pinned(info)) for info in listed_files(store, prefix_or_ids, at)]
    if not prefix_or_ids:
        raise CasstorError("the list of ids to restore is empty")
    listed = []
    for file_id in dict.fromkeys(prefix_or_ids):
        try:
            info = store.stat(file_id, at=at)
            listed.append((file_id, info.size, pinned(info)))
        except CasstorError:
            listed.append((file_id, 0, None))
    return listed
