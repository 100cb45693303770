"""The store's prepared statements, prepared once per session.

Every statement with user data is prepared (never formatted into CQL).
``Statements.for_session`` caches one set per session, so each ``Store``,
job task or test shares them.
``plain_rows`` is an execution profile returning rows as plain tuples
(for the hot block reads and existence checks).

Example::

    >>> st = Statements.for_session(session)                    # doctest: +SKIP
    >>> session.execute(st.head, ("photos/a.jpg",)).one()       # doctest: +SKIP
"""

from __future__ import annotations

import threading
import weakref

from cassandra.cluster import EXEC_PROFILE_DEFAULT, Session
from cassandra.query import tuple_factory

from .schema import DATA_KS, META_KS


class Statements:
    """Prepared statements for blocks, block lists and head rows."""

    _cache: "weakref.WeakKeyDictionary[Session, Statements]" = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    def __init__(self, session: Session) -> None:
        # The session's profile with plain tuples for rows: the default named-tuple factory builds a
        # namedtuple class for every result, ~15 % of the driver thread's time in a restore (py-spy).
        self.plain_rows = session.execution_profile_clone_update(EXEC_PROFILE_DEFAULT, row_factory=tuple_factory)
        p = session.prepare
        # LIMIT = the number of keys asked: explicit bound on the rows a check returns.
        self.existing = p(f"SELECT hash FROM {DATA_KS}.existing_blocks WHERE hash IN ? LIMIT ?")
        self.insert_block = p(f"INSERT INTO {DATA_KS}.blocks (hash, size, content) VALUES (?, ?, ?)")
        self.claim_block = p(
            f"INSERT INTO {DATA_KS}.block_claims (bucket, hash, writer) VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?")
        self.release_claim = p(
            f"DELETE FROM {DATA_KS}.block_claims WHERE bucket = ? AND hash = ? IF writer = ?")
        self.insert_existing = p(f"INSERT INTO {DATA_KS}.existing_blocks (hash, size) VALUES (?, ?)")
        self.read_block = p(f"SELECT content FROM {DATA_KS}.blocks WHERE hash = ?")
        self.read_blocks = p(f"SELECT hash, content FROM {DATA_KS}.blocks WHERE hash IN ? LIMIT ?")
        self.insert_file_block = p(
            f"INSERT INTO {META_KS}.file_blocks (id, version, block_offset, hash, size) VALUES (?, ?, ?, ?, ?)")
        self.file_blocks = p(
            f"SELECT block_offset, hash, size FROM {META_KS}.file_blocks WHERE id = ? AND version = ?")
        self.insert_head = p(
            f"INSERT INTO {META_KS}.files (id, version, size, hash, blocks, committed_at) VALUES (?, ?, ?, ?, ?, ?)")
        self.head = p(f"SELECT id, version, size, hash, blocks, committed_at FROM {META_KS}.files WHERE id = ?")
        self.all_heads = p(f"SELECT id, version, size, hash, blocks, committed_at FROM {META_KS}.files")
        self.delete_head = p(f"DELETE FROM {META_KS}.files WHERE id = ?")
        self.existing_sizes = p(f"SELECT size FROM {DATA_KS}.existing_blocks")

    @classmethod
    def for_session(cls, session: Session) -> "Statements":
        with cls._lock:
            found = cls._cache.get(session)
            if found is None:
                found = cls._cache[session] = cls(session)
            return found
