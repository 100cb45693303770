"""The file catalogue: head rows (``ls``, ``stat``, ``rm``) and store-wide totals (``stats``).

Totals are summed in Python over paged scans of the light tables (``files``
and ``existing_blocks``, never the blob table), so they are exact integers
however large the store: CQL's ``sum`` of an ``int`` column is 32-bit and
wraps past 2^31.

Example::

    >>> head(session, st, "photos/a.jpg").size                 # doctest: +SKIP
    >>> [f.id for f in list_files(session, st, "photos/")]     # doctest: +SKIP

Failures: an unknown ID raises :class:`~casstor_ops.errors.NotFoundError` (a CasstorError).
"""

from __future__ import annotations

from collections.abc import Iterator

from cassandra.cluster import Session

from casstor_ops.errors import NotFoundError
from casstor_ops.store.records import FileAttributes, FileInfo, InlineContent, StoreStats, inline_head
from casstor_ops.store.statements import Statements

SCAN_PAGE_ROWS = 5000


def _info(row, inline: InlineContent | None = None) -> FileInfo:
    # Null for a stream or a head older than the columns. A casstor that predates them rewrites a head without
    # touching them: cells older than the head belong to a previous version and are not this one's.
    attributes = (FileAttributes(row.mode, row.mtime_ns)
                  if row.mode is not None and row.attributes_written == row.head_written else None)
    return FileInfo(row.id, row.version, row.size, row.hash, row.blocks, row.committed_at, attributes, inline)


def head(session: Session, st: Statements, file_id: str) -> FileInfo:
    """The committed head of ``file_id``; NotFoundError if there is none."""
    return head_of(file_id, session.execute(st.head, (file_id,), execution_profile=st.named_rows).one())


def head_of(file_id: str, row) -> FileInfo:
    """The head of ``file_id`` from the row ``st.head`` read (None: no row, NotFoundError)."""
    if row is None:
        raise NotFoundError(f"no such file in the store: {file_id!r} (see 'casstor ls')")
    return _info(row, InlineContent(row.codec, row.content) if row.content is not None else None)


def _scan(session: Session, statement) -> Iterator:
    bound = statement.bind(())
    bound.fetch_size = SCAN_PAGE_ROWS
    return iter(session.execute(bound))


def list_files(session: Session, st: Statements, prefix: str = "") -> list[FileInfo]:
    """Committed files whose ID starts with ``prefix``, sorted by ID.

    A full scan of the head table (IDs are hashed across the ring, so a
    prefix cannot be a range query).
    """
    found = [_info(r) for r in _scan(session, st.all_heads) if r.id.startswith(prefix)]
    return sorted(found, key=lambda f: f.id)


def remove(session: Session, st: Statements, file_id: str) -> FileInfo:
    """Delete the head of ``file_id`` (its block list and blocks are left to reclaim)."""
    info = head(session, st, file_id)
    session.execute(st.delete_head, (file_id,))
    return info


def stats(session: Session, st: Statements) -> StoreStats:
    files = logical = unique = stored = 0
    for row in _scan(session, st.all_heads):
        files += 1
        logical += row.size or 0
        if inline_head(row.blocks, row.size):  # its content is kept once, in its head
            unique += row.size
            stored += row.stored_size or 0
    blocks = 0
    for row in _scan(session, st.existing_sizes):
        blocks += 1
        unique += row.size or 0
        stored += row.stored_size if row.stored_size is not None else (row.size or 0)  # null: kept raw (schema 2)
    return StoreStats(files, logical, blocks, unique, stored)
