"""The store's Python API: ``Store`` (the same operations as the ``casstor`` file commands).

Example::

    >>> store = Store.open()                                       # doctest: +SKIP
    >>> store.put("photo.jpg", "photos/2024/photo.jpg").new_bytes   # doctest: +SKIP
    >>> store.restore("photos/2024/photo.jpg", "copy.jpg")          # doctest: +SKIP
    >>> store.close()                                              # doctest: +SKIP

``progress``, when given, is called with the number of bytes just read
(``put``) or written (``restore``): ``tqdm.update`` fits (see
:mod:`casstor_ops.progress`).

Writers (``put``, ``remove``) hold a :class:`~casstor_ops.maintenance.WriterLease`
unless ``lease=False`` (the caller already holds one), so they refuse to
start inside a reclaim window (:class:`~casstor_ops.errors.MaintenanceError`).
Bad input (a missing or unreadable source, a directory, an unknown ID, an
existing destination without ``force``) raises
:class:`~casstor_ops.errors.CasstorError`; a missing or damaged block,
:class:`~casstor_ops.errors.CorruptionError`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from cassandra.cluster import Session

from . import catalog
from .connection import Endpoint, connect
from .errors import CasstorError
from .maintenance import WriterLease
from .progress import Progress
from .records import FileInfo, RestoreResult, StoreResult, StoreStats
from .restore import Restore, restore_to_path
from .schema import require_settings
from .statements import Statements
from .upload import Upload

__all__ = ["Store", "StoreResult", "RestoreResult", "FileInfo", "StoreStats"]

Source = str | os.PathLike | BinaryIO

def _check_id(file_id: str) -> str:
    if not isinstance(file_id, str) or not file_id:
        raise CasstorError("a file ID must be a non-empty string")
    if "\x00" in file_id:
        raise CasstorError(f"file ID {file_id!r} contains a NUL character")
    return file_id


@contextlib.contextmanager
def open_source(src: Source) -> Iterator[BinaryIO]:
    """A readable binary file for a path (one-line errors) or the given file object."""
    if not isinstance(src, (str, os.PathLike)):
        yield src
        return
    path = Path(src)
    if path.is_dir():
        raise CasstorError(f"cannot store {str(path)!r}: is a directory (store files one by one)")
    try:
        reader = open(path, "rb")
    except OSError as err:
        raise CasstorError(f"cannot read {str(path)!r}: {err.strerror or err}") from None
    with reader:
        yield reader


class Store:
    """A deduplicating file store on a driver session (see the module docstring)."""

    def __init__(self, session: Session, *, max_requests: int | None = None, read_window: int | None = None) -> None:
        self.session = session
        self.settings = require_settings(session)
        self._st = Statements.for_session(session)
        self._owns_cluster = False
        self._upload_options = {"max_requests": max_requests} if max_requests else {}
        self._restore_options = {"window": read_window} if read_window else {}

    @classmethod
    def open(cls, endpoint: Endpoint | None = None, **options) -> "Store":
        """Connect (starting the embedded node if needed) and open the store; ``close()`` when done."""
        session = connect(endpoint)
        try:
            store = cls(session, **options)
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

    def _lease(self, kind: str, lease: bool):
        return WriterLease(self.session, kind) if lease else contextlib.nullcontext()

    def put(self, src: Source, file_id: str, progress: Progress | None = None, lease: bool = True) -> StoreResult:
        """Store a file (path or binary file object) under ``file_id``, replacing any previous version atomically."""
        _check_id(file_id)
        with open_source(src) as reader, self._lease("store", lease):
            upload = Upload(self.session, self.settings, self._st, progress=progress, **self._upload_options)
            try:
                return upload.run(reader, file_id)
            except OSError as err:
                raise CasstorError(f"cannot read {getattr(reader, 'name', 'the source')!r}: "
                                   f"{err.strerror or err}") from None

    def restore(self, file_id: str, dest: str | os.PathLike | BinaryIO, force: bool = False,
                progress: Progress | None = None) -> RestoreResult:
        """Write the committed version of ``file_id`` to a path (atomically) or a binary file object."""
        head = self.stat(file_id)
        if isinstance(dest, (str, os.PathLike)) and str(dest) != "-":
            return restore_to_path(self._restore(head, progress), Path(dest), force)
        out = sys.stdout.buffer if isinstance(dest, (str, os.PathLike)) else dest
        result = self._restore(head, progress).run(out)
        out.flush()
        return result

    def _restore(self, head: FileInfo, progress: Progress | None) -> Restore:
        return Restore(self.session, head, self._st, progress=progress, **self._restore_options)

    def remove(self, file_id: str, lease: bool = True) -> FileInfo:
        """Remove ``file_id`` (CasstorError if unknown); its blocks stay until reclaim."""
        _check_id(file_id)
        with self._lease("rm", lease):
            return catalog.remove(self.session, self._st, file_id)

    def list(self, prefix: str = "") -> Iterator[FileInfo]:
        return iter(catalog.list_files(self.session, self._st, prefix))

    def stat(self, file_id: str) -> FileInfo:
        return catalog.head(self.session, self._st, _check_id(file_id))

    def stats(self) -> StoreStats:
        return catalog.stats(self.session, self._st)
