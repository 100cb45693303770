"""The store's Python API: ``Store`` (the same operations as the ``casstor`` file commands).

Example::

    >>> store = Store.open()                                       # doctest: +SKIP
    >>> store.put("photo.jpg", "photos/2024/photo.jpg").new_bytes   # doctest: +SKIP
    >>> store.restore("photos/2024/photo.jpg", "copy.jpg")          # doctest: +SKIP
    >>> store.close()                                              # doctest: +SKIP

``progress``, when given, is called with the number of bytes just read
(``put``) or written (``restore``): ``tqdm.update`` fits (see
:mod:`casstor_ops.store.progress`).

Every call blocks its thread until the driver answered; ``store.callbacks``
(:mod:`casstor_ops.store.engine.callbacks`) has the calls that answer on the
driver's thread instead (``casstor serve``'s). Which IDs can name a file:
:func:`~casstor_ops.store.ids.check_id`.

Writers (``put``, ``remove``) hold a :class:`~casstor_ops.store.coordination.leases.WriterLease`
(or use the caller's, ``lease=held``; ``lease=False``: none), so they refuse
to start inside a reclaim window (:class:`~casstor_ops.errors.MaintenanceError`),
and ``put`` fences its head write with it: a lease that may have lapsed
(the process was paused or cut off for longer than the lease TTL) raises
:class:`~casstor_ops.errors.LeaseLapsedError` and commits nothing.
Bad input (a missing or unreadable source, a directory, an unknown ID, an
existing destination without ``force``) raises
:class:`~casstor_ops.errors.CasstorError`; a missing or damaged block,
:class:`~casstor_ops.errors.CorruptionError`; a file overwritten or removed
(and its old blocks reclaimed) during a restore,
:class:`~casstor_ops.errors.FileChangedError`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from cassandra.cluster import Session

from casstor_ops.cluster.connection import Endpoint, connect
from casstor_ops.errors import CasstorError
from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.coordination.heartbeat import Fence, checked_then_fenced, no_fence
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import catalog
from casstor_ops.store.engine.batch_upload import BatchUpload, SmallFile
from casstor_ops.store.engine.callbacks import StoreCallbacks
from casstor_ops.store.engine.restore import Restore
from casstor_ops.store.engine.upload import Upload
from casstor_ops.store.history import retention, snapshots
from casstor_ops.store.history.forget import ForgetReport, forget
from casstor_ops.store.history.policy import Policy
from casstor_ops.store.history.snapshots import Snapshot
from casstor_ops.store.ids import check_id
from casstor_ops.store.namespace.entries import BatchedEntries, Namespace
from casstor_ops.store.namespace.listing import all_files_under
from casstor_ops.store.progress import ProgressCallback
from casstor_ops.store.records import (FileAttributes, FileInfo, ObjectMeta, RestoreResult, StoreResult, StoreStats,
                                      VersionInfo)
from casstor_ops.store.schema import StoreSettings, require_settings
from casstor_ops.store.trees.destinations import restore_to_path

__all__ = ["Store", "SmallFile", "StoreResult", "RestoreResult", "FileInfo", "FileAttributes", "StoreStats", "VersionInfo"]

Source = str | os.PathLike | BinaryIO

_NOT_REGULAR = [(stat.S_ISDIR, "is a directory (store files one by one)"), (stat.S_ISFIFO, "is a FIFO"),
                (stat.S_ISSOCK, "is a socket"), (stat.S_ISCHR, "is a character device"),
                (stat.S_ISBLK, "is a block device")]


def _open_regular(path: str, flags: int) -> int:
    """An ``open()`` opener: a descriptor on a regular file only, found out without ever blocking.

    Opening a FIFO without a writer blocks, so the open is non-blocking;
    ``fstat`` of that very descriptor (not a ``stat`` of the name, which a
    swap could race) then decides, and blocking reads are restored. With
    ``O_NOFOLLOW`` in ``flags`` a symlink is refused by the same open, so one
    swapped in after a check is never followed.
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP and flags & os.O_NOFOLLOW and os.path.islink(path):
            raise CasstorError(f"cannot store {path!r}: is a symlink, not followed") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        what = next((text for is_kind, text in _NOT_REGULAR if is_kind(mode)), None)
        if what is not None:
            hint = "" if stat.S_ISDIR(mode) else ": only regular files are stored by path (pipe it to - or --stdin)"
            raise CasstorError(f"cannot store {path!r}: {what}{hint}")
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def open_source(src: Source, follow_symlinks: bool = True) -> Iterator[tuple[BinaryIO, FileAttributes | None]]:
    """A readable binary file for a path (a regular file only), with its attributes; a file object as is, with None.

    The attributes are those of the opened file (``fstat``), taken before it is read. A path that is a
    symlink is followed (``casstor store LINK ID``, as ``cp``), unless not ``follow_symlinks``: then it is
    opened with ``O_NOFOLLOW`` and a symlink is refused (a tree's files, which a link swapped in must not
    lead outside).

    Example::

        >>> with open_source("photo.jpg") as (reader, attributes):    # doctest: +SKIP
        ...     head = reader.read(16)

    Failures: a path that is a directory, a FIFO, a socket or a device (or a
    symlink, when not following them), or cannot be opened, raises :class:`~casstor_ops.errors.CasstorError` with
    one line, at once (a FIFO is never waited on); a file object (stdin for
    ``-``/``--stdin``) is read whatever it is.
    """
    if not isinstance(src, (str, os.PathLike)):
        yield src, None
        return
    path = os.fspath(src)
    nofollow = 0 if follow_symlinks else os.O_NOFOLLOW
    try:
        reader = open(path, "rb", opener=lambda name, flags: _open_regular(name, flags | nofollow))
    except OSError as err:
        raise CasstorError(f"cannot read {path!r}: {err.strerror or err}") from None
    with reader:
        yield reader, FileAttributes.of(os.fstat(reader.fileno()))


class Store:
    """A deduplicating file store on a driver session (see the module docstring)."""

    def __init__(self, session: Session, *, max_requests: int | None = None, read_concurrency: int | None = None,
                 settings: StoreSettings | None = None, entries: BatchedEntries | None = None) -> None:
        self.session = session
        self.settings = settings or require_settings(session)  # given: read by another Store on this session
        self._st = Statements.for_session(session)
        self._owns_cluster = False
        self._upload_options = {"max_requests": max_requests} if max_requests else {}
        if entries is not None:  # a tree store's: entries written by directory (BatchedEntries)
            self._upload_options["entries"] = entries
        self._restore_options = {"concurrency": read_concurrency} if read_concurrency else {}
        # The non-blocking calls (casstor serve's), on this store's session and statements.
        self.callbacks = StoreCallbacks(session, self.settings, self._st, BlockCodec.parse(self.settings.compression))
        self.namespace = Namespace.for_session(session, self.settings.directory_rows)

    @classmethod
    def open(cls, endpoint: Endpoint | None = None, **options) -> "Store":
        """Connect (starting the embedded node if needed) and open the store; ``close()`` when done.

        The session reads only the store's two keyspaces' schema (their
        replication, for token-aware routing), not the cluster's: that cut a
        one-file ``casstor store`` by 0.1-0.25 s here.
        """
        session = connect(endpoint, schema_metadata=False)
        try:
            store = cls(session, **options)
            if len(session.cluster.metadata.all_hosts()) > 1:  # one host: every request goes there anyway
                for keyspace in (DATA_KS, META_KS):
                    session.cluster.refresh_keyspace_metadata(keyspace)
        except BaseException:
            session.cluster.shutdown()
            raise
        store._owns_cluster = True
        return store

    def close(self) -> None:
        if self._owns_cluster:
            self.session.cluster.shutdown()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _lease(self, kind: str, lease: WriterLease | bool) -> Iterator[Fence]:
        """The fence of the writer's lease: a new one (True), the caller's, or none (False)."""
        if lease is True:
            with WriterLease(self.session, kind) as held:
                yield held.fence
        else:
            yield lease.fence if lease else no_fence

    def put(self, src: Source, file_id: str, progress: ProgressCallback | None = None,
            lease: WriterLease | bool = True, attributes: FileAttributes | None = None,
            before_commit: Callable[[], None] | None = None, head_fence: Fence = no_fence,
            object_meta: Callable[[], ObjectMeta] | None = None, inline: bool = True) -> StoreResult:
        """Store a file (path or binary file object) under ``file_id``, replacing any previous version atomically.

        A path's permission bits and mtime are recorded with it; a file object's are ``attributes`` (none by
        default). ``before_commit`` is called once, when every block is stored and the head is about to be
        written: an error it raises propagates and nothing is committed (an HTTP server's ``If-Match`` check,
        made as late as the store allows). The lease's fence, then ``head_fence`` (an S3 conditional request's
        turn on its key: :mod:`casstor_ops.serve.s3.conditions`), come after it, before each head-write attempt.
        ``object_meta``, when given, is called as the head row is made, for the S3 attributes to keep in it.
        ``inline=False`` keeps even a small file in blocks (a multipart upload's part:
        :mod:`~casstor_ops.store.engine.multipart`).
        """
        check_id(file_id, storing=True)
        with open_source(src) as (reader, own), self._lease("store", lease) as lease_fence:
            attributes = own or attributes
            fence = checked_then_fenced(before_commit, lease_fence, head_fence)
            settings = self.settings if inline else replace(self.settings, inline_max=0)
            upload = Upload(self.session, settings, self._st, progress=progress, fence=fence,
                            **self._upload_options)
            try:
                return upload.run(reader, file_id, attributes, object_meta)
            except OSError as err:
                raise CasstorError(f"cannot read {getattr(reader, 'name', 'the source')!r}: "
                                   f"{err.strerror or err}") from None

    def put_many(self, files: Sequence[SmallFile], lease: WriterLease | bool = True) -> list[StoreResult | Exception]:
        """Store small files (each held in memory, at most
        :data:`~casstor_ops.store.engine.batch_upload.SMALL_FILE_BYTES` by convention) as one batch
        (:mod:`~casstor_ops.store.engine.batch_upload`): for each, in order, its result or the error that failed it
        (an invalid ID, an unreadable source, a failed write); the others are stored.
        ``lease``: as :meth:`put`'s."""
        results: list[StoreResult | Exception | None] = [None] * len(files)
        valid = []
        for n, small in enumerate(files):
            try:
                check_id(small.id, storing=True)
                valid.append(n)
            except CasstorError as err:
                results[n] = err
        if not valid:
            return results  # type: ignore[return-value]  # every place is an error
        with self._lease("store", lease) as fence:
            stored = BatchUpload(self.session, self.settings, self._st, fence=fence,
                                 **self._upload_options).run_batch([files[n] for n in valid])
        for n, result in zip(valid, stored):
            results[n] = result
        return results  # type: ignore[return-value]  # every place is filled

    def restore(self, file_id: str, dest: str | os.PathLike | BinaryIO, force: bool = False,
                progress: ProgressCallback | None = None, head: FileInfo | None = None) -> RestoreResult:
        """Write the committed version of ``file_id`` to a path (atomically, with its recorded mode and mtime)
        or a binary file object; ``head``, when the caller read it already (:meth:`stat`), saves reading it again."""
        head = head if head is not None and head.id == file_id else self.stat(file_id)
        if isinstance(dest, (str, os.PathLike)) and str(dest) != "-":
            return restore_to_path(self._restore(head, progress), Path(dest), force)
        out = sys.stdout.buffer if isinstance(dest, (str, os.PathLike)) else dest
        result = self._restore(head, progress).run(out)
        out.flush()
        return result

    def read(self, head: FileInfo, out: BinaryIO) -> RestoreResult:
        """Write the version ``head`` (from :meth:`stat`) names to ``out``, each block verified before it is written.

        For a caller that answers from the head before the content (an HTTP
        server's Content-Length and ETag): the bytes are exactly that version's,
        even if the file is overwritten meanwhile.
        """
        return self._restore(head, None).run(out)

    def _restore(self, head: FileInfo, progress: ProgressCallback | None) -> Restore:
        return Restore(self.session, head, self._st, progress=progress, **self._restore_options)

    def remove(self, file_id: str, lease: WriterLease | bool = True) -> FileInfo:
        """Remove ``file_id`` (CasstorError if unknown); its blocks stay until reclaim."""
        check_id(file_id)
        with self._lease("rm", lease):
            return catalog.remove(self.session, self._st, self.namespace, file_id)

    def remove_all(self, file_ids: list[str], lease: WriterLease | bool = True) -> None:
        """Write a delete marker for each of ``file_ids``, whatever its head, many at a time (a completed multipart
        upload's parts); their blocks stay until reclaim."""
        for file_id in file_ids:
            check_id(file_id)
        with self._lease("rm", lease):
            catalog.mark_all_removed(self.session, self._st, self.namespace, file_ids)

    def mark_removed(self, file_id: str, null_version: bool, lease: WriterLease | bool = True) -> FileInfo:
        """Write a delete marker for the S3 object ``file_id`` whatever its head (S3 stacks them; ``null_version``:
        its bucket's versioning is not Enabled); the marker."""
        with self._lease("rm", lease):
            return catalog.mark_removed(self.session, self._st, self.namespace, check_id(file_id), null_version)

    def list(self, prefix: str = "", at: datetime | None = None) -> Iterator[FileInfo]:
        """The files whose ID starts with ``prefix``, in ID order (read from the directories under it only); ``at``:
        as they were then (one version read per name: :func:`~casstor_ops.store.engine.catalog.files_at`)."""
        if at is not None:
            return catalog.files_at(self.session, self._st, prefix, at)
        return catalog.list_files(self.session, self._st, prefix)

    def list_all(self, prefix: str = "") -> list[FileInfo]:
        """The files of :meth:`list` (now) as one list, read level by level, many directories a request
        (:func:`~casstor_ops.store.namespace.listing.all_files_under`): for a caller that holds them all anyway."""
        return all_files_under(self.session, self._st, prefix)

    def stat(self, file_id: str, version: uuid.UUID | None = None, at: datetime | None = None) -> FileInfo:
        """The head of ``file_id``; or its version ``version``; or the version that was its head at ``at``.

        Failures: NotFoundError (exit 4) for an ID with no such version, or removed (a delete marker) then.
        """
        return catalog.stat(self.session, self._st, check_id(file_id), version, at)

    def versions(self, file_id: str) -> list[VersionInfo]:
        """Every version of ``file_id`` still kept, newest first, delete markers included."""
        return catalog.versions(self.session, self._st, check_id(file_id))

    def stats(self) -> StoreStats:
        return catalog.stats(self.session, self._st)

    # -- history: what is kept (casstor_ops.store.history)

    def set_retention(self, prefix: str, policy: Policy) -> Policy:
        """Make ``policy`` the retention policy of the IDs under ``prefix`` (replacing its previous one)."""
        return retention.set_policy(self.session, self._st, prefix, policy)

    def retention(self) -> dict[str, Policy]:
        """Every retention policy, by prefix."""
        return retention.policies(self.session, self._st)

    def remove_retention(self, prefix: str) -> None:
        """Drop the policy of ``prefix`` (NotFoundError if it has none)."""
        retention.remove_policy(self.session, self._st, prefix)

    def snapshot(self, prefix: str, name: str | None = None) -> Snapshot:
        """Pin the heads under ``prefix`` as they are now, against forget."""
        return snapshots.take(self.session, self._st, prefix, name)

    def snapshots(self) -> list[Snapshot]:
        return snapshots.snapshots(self.session, self._st)

    def remove_snapshot(self, name: str) -> None:
        """Unpin the snapshot ``name`` (NotFoundError if there is none)."""
        snapshots.remove(self.session, self._st, name)

    def forget(self, prefix: str | None = None, dry_run: bool = False) -> ForgetReport:
        """Drop the versions under ``prefix`` (None: all) that no policy, snapshot or grace keeps."""
        return forget(self.session, self.namespace, prefix, dry_run)
