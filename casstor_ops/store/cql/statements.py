"""Every CQL statement of casstor, prepared lazily, once per session.

Every statement with user data is prepared (never formatted into CQL);
DDL, which cannot be prepared, stays in :mod:`casstor_ops.store.schema`.
``Statements.for_session`` keeps one registry per session (weakly, so a
dropped session takes its registry with it), and each Store, job task,
verify partition or test shares it. A statement is prepared the first time
it is used, so a command only prepares what it runs (a store never
prepares reclaim's or verify's statements); after that it is a plain
attribute, with no lock or lookup on the hot path. Statement-level
settings (SERIAL on the window read, QUORUM on recording the settings)
are set here, once.

``plain_rows`` is an execution profile returning rows as plain tuples
(for the hot block reads and existence checks); ``named_rows`` one returning
named tuples without the default factory's cost per result
(:mod:`casstor_ops.cluster.row_types`; for the head reads, never for an LWT).

A :class:`Query` is one of them with the values it is sent with: what a
request sends, or a row of an unlogged batch.

Example::

    >>> st = Statements.for_session(session)                    # doctest: +SKIP
    >>> session.execute(st.head, ("photos/a.jpg",)).one()       # doctest: +SKIP
    >>> session.execute(*Query(st.head, ("photos/a.jpg",))).one()  # doctest: +SKIP

Failures: preparing raises the driver's error (e.g. ``InvalidRequest`` for a
table that does not exist yet) at the first use of that statement, and is
tried again at the next use; ``ReferenceError`` if the session was garbage
collected while its registry is still in use.
"""

from __future__ import annotations

import threading
import weakref
from typing import NamedTuple

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Session
from cassandra.query import PreparedStatement, tuple_factory

from casstor_ops.cluster.row_types import named_rows
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS


class Query(NamedTuple):
    """A prepared statement and the values it is sent with: one request (``session.execute(*query)``), or one row
    of an unlogged batch (:func:`~casstor_ops.store.cql.request_queue.unlogged_batch`). A named tuple: it unpacks as
    the pair did, and costs 0.3 us more to make (timeit: 328 against 35 ns), ~4 ms of the 3.3 s of client CPU of a
    tree store of 5,626 small files, which makes ~14,000 (heads, entries, directories and their markers)."""

    statement: PreparedStatement
    values: tuple


class _Prepared:
    """A registry attribute prepared on first access (under the registry's lock), then stored on the instance.

    A non-data descriptor: once the prepared statement is in the instance's
    ``__dict__``, attribute lookup finds it there and never calls ``__get__`` again.
    """

    def __init__(self, cql: str, consistency_level: int | None = None) -> None:
        self.cql = cql
        self.consistency_level = consistency_level
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, registry: "Statements | None", owner: type | None = None) -> "PreparedStatement | _Prepared":
        if registry is None:
            return self
        with registry._prepare_lock:
            # Another thread may have prepared it while this one waited for the lock.
            found = registry.__dict__.get(self.name)
            if found is None:
                found = registry._session.prepare(self.cql)
                if self.consistency_level is not None:
                    found.consistency_level = self.consistency_level
                registry.__dict__[self.name] = found
            return found

# A version row as a head: what FileInfo needs, and whether it is a delete marker.
_VERSION_COLUMNS = "id, version, size, hash, blocks, committed_at, mode, mtime_ns, deleted, lone_block"
# A directory entry (casstor_ops.store.namespace): the newest version of a name, summarised; a marker has no version.
_ENTRY_COLUMNS = ("version, size, hash, blocks, committed_at, mode, mtime_ns, stored_size, deleted, ino, ctime_ns, "
                  "lone_block")


class Statements:
    """The prepared statements of one session: blocks, block lists, heads, settings, leases, window, jobs."""

    _cache: "weakref.WeakKeyDictionary[Session, Statements]" = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    # -- blocks: the store's hot path
    # LIMIT = the number of keys asked: explicit bound on the rows a check returns.
    existing = _Prepared(f"SELECT hash FROM {DATA_KS}.existing_blocks WHERE hash IN ? LIMIT ?")
    insert_block = _Prepared(f"INSERT INTO {DATA_KS}.blocks (hash, size, codec, content) VALUES (?, ?, ?, ?)")
    claim_block = _Prepared(
        f"INSERT INTO {DATA_KS}.block_claims (bucket, hash, writer) VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?")
    release_claim = _Prepared(f"DELETE FROM {DATA_KS}.block_claims WHERE bucket = ? AND hash = ? IF writer = ?")
    insert_existing = _Prepared(f"INSERT INTO {DATA_KS}.existing_blocks (hash, size, stored_size) VALUES (?, ?, ?)")
    read_block = _Prepared(f"SELECT hash, codec, content FROM {DATA_KS}.blocks WHERE hash = ?")
    read_blocks = _Prepared(f"SELECT hash, codec, content FROM {DATA_KS}.blocks WHERE hash IN ? LIMIT ?")
    existing_sizes = _Prepared(f"SELECT size, stored_size FROM {DATA_KS}.existing_blocks")

    # -- block lists and heads
    insert_file_block = _Prepared(
        f"INSERT INTO {META_KS}.file_blocks (id, version, block_offset, hash, size) VALUES (?, ?, ?, ?, ?)")
    file_blocks = _Prepared(f"SELECT block_offset, hash, size FROM {META_KS}.file_blocks WHERE id = ? AND version = ?")
    # -- versions (the heads and their history) and the directory index
    # mode and mtime_ns are always bound (None for a stream): an unset value would keep a previous write's.
    # So are content, codec and stored_size in a store with inline files (casstor_ops.store.engine.inline). Stamped with
    # the version's time, as its entry is: the newest version wins in both tables, whatever order writes land in.
    insert_version = _Prepared(
        f"INSERT INTO {META_KS}.versions (id, version, size, hash, blocks, committed_at, mode, mtime_ns, ino, "
        f"ctime_ns, content, codec, stored_size, deleted, lone_block) "
        f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?")
    # The head: the newest version (with an inline file's content, so a small file's GET is one read).
    head = _Prepared(f"SELECT {_VERSION_COLUMNS}, codec, content FROM {META_KS}.versions WHERE id = ? LIMIT 1")
    # The head as it was at a time (bound as the greatest timeuuid of that instant).
    head_at = _Prepared(f"SELECT {_VERSION_COLUMNS}, codec, content FROM {META_KS}.versions "
                        f"WHERE id = ? AND version <= ? LIMIT 1")
    one_version = _Prepared(f"SELECT {_VERSION_COLUMNS}, codec, content FROM {META_KS}.versions "
                            f"WHERE id = ? AND version = ?")
    file_versions = _Prepared(f"SELECT {_VERSION_COLUMNS}, stored_size FROM {META_KS}.versions WHERE id = ?")
    all_versions = _Prepared(f"SELECT {_VERSION_COLUMNS}, stored_size FROM {META_KS}.versions")
    inline_content = _Prepared(f"SELECT codec, content FROM {META_KS}.versions WHERE id = ? AND version = ?")
    # An S3 object's version: insert_version's columns, then its S3 attributes (casstor_ops.serve.s3).
    insert_version_meta = _Prepared(
        f"INSERT INTO {META_KS}.versions (id, version, size, hash, blocks, committed_at, mode, mtime_ns, ino, "
        f"ctime_ns, content, codec, stored_size, deleted, lone_block, etag, content_type, user_meta, http_headers, "
        f"tags, checksum, parts, null_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        f"?) USING TIMESTAMP ?")
    object_head = _Prepared(f"SELECT {_VERSION_COLUMNS}, codec, content, etag, content_type, user_meta, "
                            f"http_headers, tags, checksum, null_version FROM {META_KS}.versions WHERE id = ? LIMIT 1")
    # What a listing, ListParts and a Complete need of a version beside its entry: S3's ETag and checksum.
    object_digests = _Prepared(f"SELECT etag, checksum FROM {META_KS}.versions WHERE id = ? AND version = ?")
    object_version = _Prepared(f"SELECT {_VERSION_COLUMNS}, codec, content, etag, content_type, user_meta, "
                               f"http_headers, tags, checksum, null_version FROM {META_KS}.versions "
                               f"WHERE id = ? AND version = ?")
    # A multipart object's parts (not in object_head: up to 10,000 of them, read only when asked for).
    object_parts = _Prepared(f"SELECT parts FROM {META_KS}.versions WHERE id = ? AND version = ?")
    # IF EXISTS: a version forgotten meanwhile is not brought back as a row of tags only.
    set_object_tags = _Prepared(f"UPDATE {META_KS}.versions SET tags = ? WHERE id = ? AND version = ? IF EXISTS")
    object_versions = _Prepared(f"SELECT {_VERSION_COLUMNS}, etag, stored_size, null_version, checksum "
                                f"FROM {META_KS}.versions WHERE id = ?")
    # -- S3 buckets (rare writes: a lightweight transaction makes a second CreateBucket of a name fail)
    create_bucket = _Prepared(
        f"INSERT INTO {META_KS}.buckets (name, created_at, owner, location) VALUES (?, ?, ?, ?) IF NOT EXISTS")
    read_bucket = _Prepared(
        f"SELECT name, created_at, versioning, owner, location, cors FROM {META_KS}.buckets WHERE name = ?")
    set_bucket_versioning = _Prepared(f"UPDATE {META_KS}.buckets SET versioning = ? WHERE name = ?")
    all_buckets = _Prepared(f"SELECT name, created_at, owner FROM {META_KS}.buckets")
    bucket_cors = _Prepared(f"SELECT cors FROM {META_KS}.buckets WHERE name = ?")
    set_bucket_cors = _Prepared(f"UPDATE {META_KS}.buckets SET cors = ? WHERE name = ? IF EXISTS")  # null: delete
    read_bucket_tags = _Prepared(f"SELECT tags FROM {META_KS}.buckets WHERE name = ?")
    set_bucket_tags = _Prepared(f"UPDATE {META_KS}.buckets SET tags = ? WHERE name = ? IF EXISTS")
    # S3 conditional writes: one gateway's turn on a key at a time (casstor_ops.serve.s3.conditions)
    lock_object = _Prepared(f"INSERT INTO {META_KS}.object_locks (id, holder) VALUES (?, ?) IF NOT EXISTS USING TTL ?")
    unlock_object = _Prepared(f"DELETE FROM {META_KS}.object_locks WHERE id = ? IF holder = ?")
    delete_bucket = _Prepared(f"DELETE FROM {META_KS}.buckets WHERE name = ? IF EXISTS")
    insert_entry = _Prepared(
        f"INSERT INTO {META_KS}.dir_entries (dir, bucket, name, {_ENTRY_COLUMNS}) "
        f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?")
    insert_marker = _Prepared(f"INSERT INTO {META_KS}.dir_entries (dir, bucket, name) VALUES (?, ?, ?)")
    delete_entry_at = _Prepared(
        f"DELETE FROM {META_KS}.dir_entries USING TIMESTAMP ? WHERE dir = ? AND bucket IN ? AND name = ?")
    # When an ID's entry was written (its buckets of every generation): a rewrite after its version was dropped
    # must be stamped later (casstor_ops.store.namespace.entries).
    entry_written = _Prepared(
        f"SELECT WRITETIME(version) AS written FROM {META_KS}.dir_entries WHERE dir = ? AND bucket IN ? AND name = ?")
    directory_entries = _Prepared(
        f"SELECT name, {_ENTRY_COLUMNS} FROM {META_KS}.dir_entries WHERE dir = ? AND bucket = ? AND name >= ?")
    # Many unsplit directories' entries in one request (their bucket 0): a tree store's read-ahead, a level listing.
    unsplit_entries = _Prepared(
        f"SELECT dir, name, {_ENTRY_COLUMNS} FROM {META_KS}.dir_entries WHERE dir IN ? AND bucket = 0")
    bucket_rows = _Prepared(f"SELECT COUNT(*) FROM {META_KS}.dir_entries WHERE dir = ? AND bucket = ?")
    directory_generation = _Prepared(f"SELECT generation FROM {META_KS}.directories WHERE dir = ?")
    directory_generations = _Prepared(f"SELECT dir, generation FROM {META_KS}.directories WHERE dir IN ?")
    # The key alone: never overwrites a generation a split recorded.
    make_directory = _Prepared(f"INSERT INTO {META_KS}.directories (dir) VALUES (?)")
    split_directory = _Prepared(f"UPDATE {META_KS}.directories SET generation = ? WHERE dir = ? IF generation = ?")
    # -- history (casstor_ops.store.history): forget deletes a version row as of the version's own time (the row's
    # write time), so the delete removes that row and can shadow nothing a later store writes.
    delete_version_at = _Prepared(f"DELETE FROM {META_KS}.versions USING TIMESTAMP ? WHERE id = ? AND version = ?")
    all_block_list_hashes = _Prepared(f"SELECT id, version, hash FROM {META_KS}.file_blocks")
    all_lone_blocks = _Prepared(f"SELECT id, version, lone_block FROM {META_KS}.versions")
    set_retention = _Prepared(
        f"INSERT INTO {META_KS}.retention (prefix, keep_last, keep_within_s, keep_hourly, keep_daily, keep_weekly, "
        f"keep_monthly) VALUES (?, ?, ?, ?, ?, ?, ?)")
    retention_policies = _Prepared(
        f"SELECT prefix, keep_last, keep_within_s, keep_hourly, keep_daily, keep_weekly, keep_monthly "
        f"FROM {META_KS}.retention")
    delete_retention = _Prepared(f"DELETE FROM {META_KS}.retention WHERE prefix = ? IF EXISTS")
    insert_snapshot = _Prepared(f"INSERT INTO {META_KS}.snapshots (name, prefix, at) VALUES (?, ?, ?) IF NOT EXISTS")
    all_snapshots = _Prepared(f"SELECT name, prefix, at FROM {META_KS}.snapshots")
    delete_snapshot = _Prepared(f"DELETE FROM {META_KS}.snapshots WHERE name = ? IF EXISTS")
    # Schema 4's heads in a slice of the token ring, read once by the upgrade to schema 5 (casstor_ops.store.schema).
    schema4_heads = _Prepared(f"SELECT id, version, size, hash, blocks, committed_at, mode, mtime_ns, content, codec, "
                              f"stored_size, WRITETIME(version) AS head_written, "
                              f"WRITETIME(mtime_ns) AS attributes_written FROM {META_KS}.files "
                              f"WHERE token(id) > ? AND token(id) <= ?")

    # -- settings and replication
    keyspace_replication = _Prepared("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?")
    table_exists = _Prepared(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?")
    all_settings = _Prepared(f"SELECT name, value FROM {META_KS}.settings")
    setting = _Prepared(f"SELECT value FROM {META_KS}.settings WHERE name = ?")
    # QUORUM whatever CASSTOR_CONSISTENCY says: the settings are written once and every writer must agree on them.
    record_setting = _Prepared(f"INSERT INTO {META_KS}.settings (name, value) VALUES (?, ?) IF NOT EXISTS",
                               ConsistencyLevel.QUORUM)
    write_setting = _Prepared(f"INSERT INTO {META_KS}.settings (name, value) VALUES (?, ?)")
    # ONE: system.local is the node's own table, and the request is sent to the node whose clock is asked.
    node_clock = _Prepared("SELECT toUnixTimestamp(now()) AS now_ms FROM system.local", ConsistencyLevel.ONE)

    # -- writer leases (TTL bound per call: it is a setting, CASSTOR_LEASE_TTL_S, not the statement's)
    insert_lease = _Prepared(
        f"INSERT INTO {META_KS}.writer_leases (writer, kind, host, started_at) VALUES (?, ?, ?, ?) USING TTL ?")
    delete_lease = _Prepared(f"DELETE FROM {META_KS}.writer_leases WHERE writer = ?")
    lease_writers = _Prepared(f"SELECT writer FROM {META_KS}.writer_leases")

    # -- the reclaim window
    # SERIAL: an LWT that just committed (a window opened or taken over) is seen.
    window_row = _Prepared(f"SELECT holder, mode, state, since FROM {META_KS}.maintenance WHERE name = ?",
                           ConsistencyLevel.SERIAL)
    open_window = _Prepared(
        f"INSERT INTO {META_KS}.maintenance (name, holder, mode, state, since) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS")
    take_over_window = _Prepared(
        f"UPDATE {META_KS}.maintenance SET holder = ?, mode = ?, since = ? WHERE name = ? IF holder = ?")
    set_window_state = _Prepared(f"UPDATE {META_KS}.maintenance SET state = ? WHERE name = ? IF holder = ?")
    close_any_window = _Prepared(f"DELETE FROM {META_KS}.maintenance WHERE name = ? IF EXISTS")
    close_held_window = _Prepared(f"DELETE FROM {META_KS}.maintenance WHERE name = ? IF holder = ?")
    window_heartbeat = _Prepared(
        f"INSERT INTO {META_KS}.maintenance (name, holder, since) VALUES (?, ?, ?) USING TTL ?")
    delete_window_row = _Prepared(f"DELETE FROM {META_KS}.maintenance WHERE name = ?")

    # -- reclaim and verify: key checks and repairs
    index_size = _Prepared(f"SELECT size FROM {DATA_KS}.existing_blocks WHERE hash = ?")
    block_size = _Prepared(f"SELECT size FROM {DATA_KS}.blocks WHERE hash = ?")
    block_row = _Prepared(f"SELECT size, codec, content FROM {DATA_KS}.blocks WHERE hash = ?")
    delete_index = _Prepared(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = ?")
    delete_index_at = _Prepared(f"DELETE FROM {DATA_KS}.existing_blocks USING TIMESTAMP ? WHERE hash = ?")
    delete_block_at = _Prepared(f"DELETE FROM {DATA_KS}.blocks USING TIMESTAMP ? WHERE hash = ?")
    delete_block_list_at = _Prepared(
        f"DELETE FROM {META_KS}.file_blocks USING TIMESTAMP ? WHERE id = ? AND version = ?")

    def __init__(self, session: Session) -> None:
        # Weak: the registry is the value of a WeakKeyDictionary keyed by this session; a strong
        # reference would keep the session (and its entry) alive for ever.
        self._session = weakref.proxy(session)
        self._prepare_lock = threading.Lock()
        # The session's profile with plain tuples for rows: the default named-tuple factory builds a
        # namedtuple class for every result, ~15 % of the driver thread's time in a restore (py-spy).
        self.plain_rows = session.execution_profile_clone_update(EXEC_PROFILE_DEFAULT, row_factory=tuple_factory)
        # Named rows with one class per column list (the head reads). Not the default: the driver cannot tell
        # an LWT's [applied] with a row factory of its own.
        self.named_rows = session.execution_profile_clone_update(EXEC_PROFILE_DEFAULT, row_factory=named_rows)

    @classmethod
    def for_session(cls, session: Session) -> "Statements":
        """The session's registry, created on first use (nothing is prepared until a statement is used)."""
        with cls._lock:
            found = cls._cache.get(session)
            if found is None:
                found = cls._cache[session] = cls(session)
            return found
