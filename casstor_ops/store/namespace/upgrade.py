"""The upgrade to schema 5: schema 4's heads (``files``, one row an ID) become versions and directory entries.

Each head of ``files`` is copied as the one version of its ID, stamped with
its version's time, and its entry written, exactly as a store writes them.
The copy is idempotent (the same rows, the same timestamps), so an upgrade
killed at any point is completed by running ``casstor init`` again: the
settings' ``schema_version`` is written after the copy, and until then this
casstor refuses the store and an older one keeps reading ``files``. The
table ``files`` is left as it was (an older casstor's last state; nothing
reads it after the upgrade).

Stores of schema 2 and 3 gain schema 4's columns first, as before.

Example::

    >>> copy_heads(session, settings)     # doctest: +SKIP
    5626

Failures: the driver's errors propagate; nothing is lost (the source rows are
only read).
"""

from __future__ import annotations

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent_with_args

from casstor_ops.store.keyspaces import META_KS
from casstor_ops.store.namespace.entries import Namespace, version_micros
from casstor_ops.store.records import FileAttributes, FileInfo
from casstor_ops.store.statements import Statements

COPY_PAGE_ROWS = 500
COPY_CONCURRENCY = 32

# Columns schema 2 and 3 lacked (they are what the schema-4 read selects).
SCHEMA_4_COLUMNS = [f"ALTER TABLE {META_KS}.files ADD IF NOT EXISTS (mode int, mtime_ns bigint)",
                    f"ALTER TABLE {META_KS}.files ADD IF NOT EXISTS (content blob, codec text, stored_size int)"]


def copy_heads(session: Session, directory_rows: int) -> int:
    """Copy every head of ``files`` into ``versions`` and the directory index; the number copied."""
    st = Statements.for_session(session)
    namespace = Namespace.for_session(session, directory_rows)
    bound = st.schema4_heads.bind(())
    bound.fetch_size = COPY_PAGE_ROWS
    result = session.execute(bound, execution_profile=st.named_rows)
    copied = 0
    while True:
        rows = list(result.current_rows)
        _copy_page(session, st, namespace, rows)
        copied += len(rows)
        if not result.has_more_pages:
            return copied
        result.fetch_next_page()


def _copy_page(session: Session, st: Statements, namespace: Namespace, rows: list) -> None:
    versions = [(r.id, r.version, r.size, r.hash, r.blocks, r.committed_at, *_attributes(r), None, None, r.content, r.codec,
                 r.stored_size, False, version_micros(r.version)) for r in rows]
    for ok, outcome in execute_concurrent_with_args(session, st.insert_version, versions,
                                                    concurrency=COPY_CONCURRENCY, raise_on_first_error=True):
        assert ok, outcome
    for row, values in zip(rows, versions):
        attributes = FileAttributes(*values[6:8]) if values[6] is not None else None
        namespace.publish(FileInfo(row.id, row.version, row.size, row.hash, row.blocks, row.committed_at,
                                   attributes), row.stored_size)


def _attributes(row) -> tuple:
    """Mode and mtime when written with this version (a casstor older than the columns rewrote a head without
    them: cells older than the head belong to a previous version)."""
    if row.mode is not None and row.attributes_written == row.head_written:
        return row.mode, row.mtime_ns
    return None, None
