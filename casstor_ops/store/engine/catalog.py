"""The file catalogue: heads and versions (``ls``, ``stat``, ``rm``) and store-wide totals (``stats``).

A file's head is the newest row of its ``versions`` partition (one
partition read); a delete marker there means the file is removed. Listings
come from the directory index (:mod:`casstor_ops.store.namespace`), never a
scan of the store. Totals are summed in Python over paged scans of the
light tables (``versions`` and ``existing_blocks``, never the blob table),
so they are exact integers however large the store: CQL's ``sum`` of an
``int`` column is 32-bit and wraps past 2^31.

Example::

    >>> head(session, st, "photos/a.jpg").size                 # doctest: +SKIP
    >>> [f.id for f in list_files(session, st, "photos/")]     # doctest: +SKIP

Failures: an unknown or removed ID raises :class:`~casstor_ops.errors.NotFoundError` (a CasstorError).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import NamedTuple

from cassandra.cluster import Session
from cassandra.util import max_uuid_from_time, uuid_from_time

from casstor_ops.errors import NotFoundError
from casstor_ops.store.blocks.block_list import file_hash_of
from casstor_ops.store.cql.row_requests import results, write_all
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.engine.commit import version_write, write_version
from casstor_ops.store.namespace.entries import Namespace, version_micros
from casstor_ops.store.namespace.layout import split_id
from casstor_ops.store.namespace.listing import WALK_AHEAD, entries_under, files_under
from casstor_ops.store.records import (FileAttributes, FileInfo, InlineContent, ObjectMeta, StoreStats, VersionInfo,
                                      VersionRow, inline_head)

SCAN_PAGE_ROWS = 5000


def _info(row, inline: InlineContent | None = None) -> FileInfo:
    attributes = FileAttributes(row.mode, row.mtime_ns) if row.mode is not None else None
    return FileInfo(row.id, row.version, row.size, file_hash_of(row), row.blocks, row.committed_at, attributes, inline,
                    row.lone_block)


def head(session: Session, st: Statements, file_id: str) -> FileInfo:
    """The committed head of ``file_id``; NotFoundError if there is none."""
    return head_of(file_id, session.execute(st.head, (file_id,), execution_profile=st.named_rows).one())


class Lookup(NamedTuple):
    """The read of one version of a file, and the words (``when``) a NotFoundError adds to its ID."""

    read: Query
    when: str


def lookup(st: Statements, file_id: str, version: uuid.UUID | None = None, at: datetime | None = None) -> Lookup:
    """The read of ``file_id``'s version ``version``, or of the version that was its head at ``at`` (a version's
    time is when its block list began), or of its head."""
    if version is not None:
        return Lookup(Query(st.one_version, (file_id, version)), f" version {version}")
    if at is not None:
        return Lookup(Query(st.head_at, (file_id, max_uuid_from_time(at.timestamp()))), f" at {at.isoformat()}")
    return Lookup(Query(st.head, (file_id,)), "")


def stat(session: Session, st: Statements, file_id: str, version: uuid.UUID | None = None,
         at: datetime | None = None) -> FileInfo:
    """The version :func:`lookup` names; NotFoundError if there is none (or it is a delete marker)."""
    read, when = lookup(st, file_id, version, at)
    return head_of(file_id, session.execute(*read, execution_profile=st.named_rows).one(), when)


def head_of(file_id: str, row, when: str = "") -> FileInfo:
    """The head of ``file_id`` from a row ``st.head`` read (None or a delete marker: NotFoundError)."""
    if row is None or row.deleted:
        hint = "it was removed: see 'casstor ls --versions'" if row is not None else "see 'casstor ls'"
        raise NotFoundError(f"no such file in the store: {file_id!r}{when} ({hint})")
    return _info(row, InlineContent(row.codec, row.content) if row.content is not None else None)


def versions(session: Session, st: Statements, file_id: str) -> list[VersionInfo]:
    """Every version of ``file_id`` kept, newest first, delete markers included; NotFoundError if it has none."""
    found = [VersionInfo(_info(r), bool(r.deleted), r.stored_size)
             for r in session.execute(st.file_versions, (file_id,), execution_profile=st.named_rows)]
    if not found:
        raise NotFoundError(f"no such file in the store: {file_id!r} (see 'casstor ls')")
    return found


def list_files(session: Session, st: Statements, prefix: str = "") -> Iterator[FileInfo]:
    """Committed files whose ID starts with ``prefix``, in ID order, read from the directories under it."""
    return files_under(session, st, prefix, ahead=WALK_AHEAD)


def files_at(session: Session, st: Statements, prefix: str, at: datetime) -> Iterator[FileInfo]:
    """The files whose ID starts with ``prefix`` as they were at ``at``, in ID order.

    Every name of the directory index under the prefix is read as of ``at``
    (``head_at``, a page of names at once: :mod:`~casstor_ops.store.cql.row_requests`), removed files' names
    included: a file removed after ``at`` was there then. A name with no
    version then, or a delete marker, is left out.
    """
    bound = max_uuid_from_time(at.timestamp())
    names = (entry.file.id for entry in entries_under(session, st, prefix, include_deleted=True, ahead=WALK_AHEAD))
    for rows in results(session, (Query(st.head_at, (name, bound)) for name in names), st.named_rows):
        row = rows.one()
        if row is not None and not row.deleted:
            yield head_of(row.id, row)


def remove(session: Session, st: Statements, namespace: Namespace, file_id: str) -> FileInfo:
    """Write a delete marker for ``file_id`` (its versions and blocks are left to forget and reclaim)."""
    info = head(session, st, file_id)
    mark_removed(session, st, namespace, file_id)
    return info


def mark_removed(session: Session, st: Statements, namespace: Namespace, file_id: str,
                 null_version: bool | None = None) -> FileInfo:
    """Write a delete marker for ``file_id``, whatever its head (an S3 object's: ``null_version`` not None, as
    :class:`~casstor_ops.store.records.ObjectMeta`'s); the marker."""
    row, gone = _marker(file_id)
    write_version(session, st, row, None if null_version is None else ObjectMeta(null_version=null_version))
    namespace.publish(gone, deleted=True)
    return gone


def mark_all_removed(session: Session, st: Statements, namespace: Namespace, file_ids: Sequence[str]) -> None:
    """Write a delete marker for each of ``file_ids`` (files, not S3 objects: a completed upload's parts), as
    :func:`mark_removed` does for one, in the same order: every version row first, many at once
    (:mod:`~casstor_ops.store.cql.row_requests`), then the directory entries, many to a request, so no entry names a
    marker whose row is not written.

    Failures: the driver's first error; the markers written before it stay (each is one file's removal)."""
    markers = [_marker(file_id) for file_id in file_ids]
    write_all(session, [version_write(st, row, None) for row, _ in markers])
    by_directory: dict[str, list[tuple[FileInfo, int | None]]] = {}
    for _, gone in markers:
        by_directory.setdefault(split_id(gone.id)[0], []).append((gone, None))
    namespace.publish_many(by_directory, deleted=True)


def _marker(file_id: str) -> tuple[VersionRow, FileInfo]:
    """A new delete marker of ``file_id``: its version row, and its summary."""
    now = datetime.now(timezone.utc)
    marker = uuid_from_time(now.timestamp())
    row = VersionRow(file_id, marker, 0, b"", 0, now, mode=None, mtime_ns=None, ino=None, ctime_ns=None,
                     content=None, codec=None, stored_size=None, deleted=True, lone_block=None,
                     written_at=version_micros(marker))
    return row, FileInfo(file_id, marker, 0, b"", 0, None)


def scan(session: Session, statement) -> Iterator:
    """The rows of a prepared statement without parameters (a table scan), paged by ``SCAN_PAGE_ROWS``."""
    bound = statement.bind(())
    bound.fetch_size = SCAN_PAGE_ROWS
    return iter(session.execute(bound, execution_profile=Statements.for_session(session).named_rows))


def current_heads(rows: Iterator) -> Iterator:
    """From a scan of ``versions`` (partitions whole, each newest first): each ID's head row, delete markers
    left out."""
    last = None
    for row in rows:
        if row.id != last:
            last = row.id
            if not row.deleted:
                yield row


def stats(session: Session, st: Statements) -> StoreStats:
    files = logical = unique = stored = 0
    for row in current_heads(scan(session, st.all_versions)):
        files += 1
        logical += row.size or 0
        if inline_head(row.blocks, row.size):  # its content is kept once, in its head
            unique += row.size
            stored += row.stored_size or 0
    blocks = 0
    for row in scan(session, st.existing_sizes):
        blocks += 1
        unique += row.size or 0
        stored += row.stored_size if row.stored_size is not None else (row.size or 0)  # null: kept raw (schema 2)
    return StoreStats(files, logical, blocks, unique, stored)
