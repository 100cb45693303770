"""The store's schema, its recorded settings, and ``casstor init``.

Two keyspaces with their own replication, because blocks and metadata
have different costs and different value per byte: ``casstor_data`` holds
the bulk (block content) and its light index; ``casstor_meta`` holds the
small, precious rows (files, block lists, settings, the reclaim window).

``casstor_data``

* ``blocks (hash blob PK, size int, content blob, codec text)``: one
  partition per block, keyed by its 32-byte BLAKE2b digest of the
  plaintext; ``size`` is the plaintext's, ``content`` what is stored
  (compressed when ``codec`` is ``zstd``, raw when null:
  :mod:`casstor_ops.store.blocks.codec`). A hash is uniformly
  distributed, so the key spreads load evenly over the ring; one block a
  partition keeps reads and deletes of a block single-partition.
* ``existing_blocks (hash blob PK, size int, stored_size int)``: the light index the store
  asks "do you have it?". It has no content column, so existence checks
  and full scans (stats, reclaim, verify) never touch blob SSTables (a
  ``count(*)`` over ``blocks`` ran a 1 GiB-heap node out of memory). It is
  written *after* the block, so an index row implies the block is there.
  It lives beside ``blocks`` (same replication): it vouches for blocks.
  ``stored_size`` is the content's length as stored (null: as ``size``),
  so stats count bytes after compression without reading content.
* ``block_claims ((bucket) PK, hash CK, writer uuid)``: which store is
  uploading a missing block, taken with ``IF NOT EXISTS`` and a TTL, so
  concurrent stores of shared new blocks upload each once
  (:mod:`casstor_ops.store.blocks.claims`). ``CLAIM_PARTITIONS`` partitions (the
  column ``bucket`` is the partition's number:
  :func:`~casstor_ops.store.blocks.claims.claim_partition`, not a directory's
  bucket nor an S3 bucket), chosen by the
  hash, so one conditional batch (one Paxos round) claims many blocks:
  measured here, 4,356 claims cost the node 0.8-1.2 CPU-seconds in
  batches of ~16 against 5.5-9 one LWT each; per claim, in batches of the
  missing blocks of one existence check (256 hashes), 16 partitions cost the
  node ~107 us, 4 ~40, 1 ~20 (``docs/benchmarks.md``). More
  partitions spread claims over more replicas and make concurrent stores meet
  less often in one Paxos round, and cost more rounds: 4 keeps most of the
  saving.

``casstor_meta``

* ``versions (id text PK, version timeuuid CK DESC, size bigint, hash blob,
  blocks int, committed_at timestamp, mode int, mtime_ns bigint, content blob,
  codec text, stored_size int, deleted boolean)`` (schema 5): every version
  of a file, newest first; the newest row is the head, read in one partition
  read. A store writes a new version's block list first and then its row in
  one single-partition write (the commit point), so readers see the old
  version or the new one, never a mix, and a store killed at any moment
  leaves the old head. ``deleted`` marks a *delete marker* (``rm``). Rows are
  stamped ``USING TIMESTAMP`` with the version's time, as its directory
  entry is. ``mode`` (``st_mode & 0o7777``) and ``mtime_ns`` are the
  source's, null when it was a stream; a restore to a path applies them.
  ``content, codec, stored_size`` hold an *inline* file's content, in a store
  initialised with ``inline_max`` > 0: a file of 1 to ``inline_max`` bytes is
  kept in its version row, encoded as a block is (``codec``), with ``blocks``
  0 and no block list (:mod:`casstor_ops.store.engine.inline`).
* ``dir_entries ((dir text, bucket int) PK, name text CK, ...)`` and
  ``directories (dir text PK, generation int)`` (schema 5): the directory
  index listings read, a row per name of a directory (its newest version
  summarised, or a subdirectory marker), split into buckets as a directory
  grows (:mod:`casstor_ops.store.namespace`; ``docs/schema.md`` has the
  partition arithmetic). Schema 4's ``files`` (one head an ID) is read once,
  by the upgrade, and left as it was.
* ``file_blocks ((id, version) PK, block_offset bigint CK, hash blob, size
  int)``: a version's block list, ordered by byte offset, paged on read.
  Keyed by (id, version) so a new version never overwrites the rows of the
  one readers may still be reading; superseded and never-committed lists
  are garbage that reclaim removes after a grace period.
* ``settings (name text PK, value text)``: the chunker, its sizes, the block
  and file hash functions (:mod:`casstor_ops.store.blocks.hashing`) and the schema
  version, written once with ``IF NOT EXISTS``, the version last (it
  vouches for the rest: without it the store is not initialised); and the
  compression of new blocks, the one setting a later ``casstor init
  --compression`` may change (:func:`set_compression`).
* ``maintenance (name text PK, …)``: the reclaim window flag (taken with a
  lightweight transaction) and ``writer_leases``: running writers'
  heartbeats (TTL rows), so reclaim can wait for them.

Hashes are 32-byte blobs, not 64-character hex text: half the key bytes in
every index, block list and bloom filter, and no encode/decode on the hot
path (measured: see ``docs/schema.md``).

DDL cannot be prepared; the only variable parts of it (replication factors
and data-centre names) are validated here against ``[A-Za-z0-9_.-]`` and
integers before they go into a statement. Everything else is prepared
(:mod:`casstor_ops.store.cql.statements`).

Example::

    >>> settings = init_store(session, Replication.simple(1), Replication.simple(1))  # doctest: +SKIP
    >>> settings.chunk_avg
    196608

Failures: a conflicting re-init raises :class:`~casstor_ops.errors.CasstorError`
before it writes anything (an upgrade included).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, fields, replace

from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.cluster import Session
from cassandra.query import SimpleStatement

from casstor_ops.cluster.connection import endpoint_of, reported_as_user_errors
from casstor_ops.errors import EXIT_NOT_INITIALISED, CasstorError
from casstor_ops.store.blocks.codec import DEFAULT_COMPRESSION, NONE, BlockCodec
from casstor_ops.store.blocks.hashing import BLOCK_HASH, FILE_HASH
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.namespace.upgrade import SCHEMA_4_COLUMNS, HeadCopier, copy_heads, upgrade_window

# 2: file hashes are BLAKE2b of the block hashes (1 hashed the whole content again).
# 3: blocks record their codec and may be compressed; index rows their stored size. A casstor that reads
#    schema 2 would take a compressed block for a corrupt one, so it must refuse the store instead.
# 4: a head may hold its file's content (inline files, blocks 0 and no block list). A casstor that reads schema 3
#    would take such a head for a file whose block list is lost.
# 5: heads are versions (history) and listed from a directory index; schema 4's 'files' is read once, by the
#    upgrade. A casstor that reads schema 4 would see no file stored after it.
# 6: a one-block file's block list is its version row's (and entry's) lone_block, with no file_blocks rows. A
#    casstor that reads schema 5 would take such a head for a file whose block list is lost.
# 7: such a row (and entry) holds no file hash either: it is its lone block's hash's hash (casstor_ops.store
#    .block_list.file_hash_of). A casstor that reads schema 6 would take its null hash for a damaged row.
SCHEMA_VERSION = 7
UPGRADABLE = {2, 3, 4, 5, 6}  # schema versions 'casstor init' upgrades in place (columns added, heads copied)

# The blocks table's own compression, by whether the store compresses new blocks itself. Its LZ4 cannot
# shrink zstd output and costs node CPU on every write, compaction and read of it (docs/benchmarks.md), so a
# compressing store gets NoopCompressor: no compression, but the compressed-file format and its checksum on
# every chunk read. Not compression off: an uncompressed SSTable is read without a checksum, so a damaged
# replica serves the changed bytes (measured: docs/operations.md, "A damaged replica"), and a read repair,
# which settles equal timestamps by the greater value, may copy them to the good replicas. Raw blocks of a
# store with compression none keep LZ4. Follows set_compression.
NODE_COMPRESSION = {True: "{'class': 'NoopCompressor'}", False: "{'class': 'LZ4Compressor'}"}


# The directory index's tables, read a partition at a time (a listing, a tree restore or re-run), take zstd: a
# store of 5,626 small files' dir_entries 778 -> 649 KB, directories 46 -> 37 KB. Tables read a row at a time on
# every request (versions: a GET's head; existing_blocks: existence checks) keep LZ4, which decodes a chunk
# several times faster. For new stores (CREATE IF NOT EXISTS), as the blocks table's.
_PARTITION_READ_COMPRESSION = "{'class': 'ZstdCompressor', 'chunk_length_in_kb': 16}"


def _node_compression(spec: str) -> str:
    return NODE_COMPRESSION[BlockCodec.parse(spec).level > 0]


_TABLES = [
    f"""CREATE TABLE IF NOT EXISTS {DATA_KS}.blocks (
        hash blob PRIMARY KEY, size int, content blob) WITH compression = {{node_compression}}""",
    f"""CREATE TABLE IF NOT EXISTS {DATA_KS}.existing_blocks (
        hash blob PRIMARY KEY, size int)""",
    # Schema 3 (compressed blocks): stores of schema 2 gain them here; their blocks read as raw.
    f"ALTER TABLE {DATA_KS}.blocks ADD IF NOT EXISTS codec text",
    f"ALTER TABLE {DATA_KS}.existing_blocks ADD IF NOT EXISTS stored_size int",
    # Claims only save work (a lost or revived claim costs one duplicate upload), and all expire:
    # their tombstones need no ten-day grace.
    f"""CREATE TABLE IF NOT EXISTS {DATA_KS}.block_claims (
        bucket int, hash blob, writer uuid, PRIMARY KEY (bucket, hash)) WITH gc_grace_seconds = 3600""",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.settings (
        name text PRIMARY KEY, value text)""",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.file_blocks (
        id text, version timeuuid, block_offset bigint, hash blob, size int,
        PRIMARY KEY ((id, version), block_offset))""",
    # Schema 5: versions, the directory index, retention policies and snapshots (casstor_ops.store.namespace).
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.versions (
        id text, version timeuuid, size bigint, hash blob, blocks int, committed_at timestamp, mode int,
        mtime_ns bigint, content blob, codec text, stored_size int, deleted boolean,
        PRIMARY KEY (id, version)) WITH CLUSTERING ORDER BY (version DESC)""",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.dir_entries (
        dir text, bucket int, name text, version timeuuid, size bigint, hash blob, blocks int,
        committed_at timestamp, mode int, mtime_ns bigint, stored_size int, deleted boolean,
        PRIMARY KEY ((dir, bucket), name)) WITH compression = {_PARTITION_READ_COMPRESSION}""",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.directories (dir text PRIMARY KEY, generation int)
        WITH compression = {_PARTITION_READ_COMPRESSION}""",
    # S3 (casstor_ops.serve.s3): an object's attributes in its version row (null for other files), and buckets.
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS etag text",
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS content_type text",
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS user_meta map<text, text>",
    # Cache-Control, Content-Disposition, Content-Encoding, Content-Language, Expires as written (lower-case names).
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS http_headers map<text, text>",
    # An S3 object's tags, checksum ("ALGORITHM TYPE VALUE") and, for a multipart one, its parts (size, checksum):
    # with the version, so a version's forget takes them with it and no other table has to follow it.
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS tags map<text, text>",
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS checksum text",
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS parts list<frozen<tuple<bigint, text>>>",
    # S3's "null" version: written while its bucket's versioning was not Enabled (casstor_ops.serve.s3.versions).
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS null_version boolean",
    # A tree store's source file when it was read (inode, change time): an unchanged re-run skips by them.
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS ino bigint",
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS ctime_ns bigint",
    f"ALTER TABLE {META_KS}.dir_entries ADD IF NOT EXISTS ino bigint",
    f"ALTER TABLE {META_KS}.dir_entries ADD IF NOT EXISTS ctime_ns bigint",
    # The hash of a one-block file's only block (casstor_ops.store.blocks.block_list): its block list, read with the row
    # (a tree restore reads no list for it). Null: the list is in file_blocks (every row written before schema 6).
    f"ALTER TABLE {META_KS}.versions ADD IF NOT EXISTS lone_block blob",
    f"ALTER TABLE {META_KS}.dir_entries ADD IF NOT EXISTS lone_block blob",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.buckets (name text PRIMARY KEY, created_at timestamp)""",
    f"ALTER TABLE {META_KS}.buckets ADD IF NOT EXISTS versioning text",  # S3's Enabled or Suspended; null: never set
    f"ALTER TABLE {META_KS}.buckets ADD IF NOT EXISTS cors text",  # S3's CORS rules as JSON (serve/s3/cors.py)
    # The access key that created it (S3's owner; null: made before owners, every user's) and its LocationConstraint.
    f"ALTER TABLE {META_KS}.buckets ADD IF NOT EXISTS owner text",
    f"ALTER TABLE {META_KS}.buckets ADD IF NOT EXISTS location text",
    f"ALTER TABLE {META_KS}.buckets ADD IF NOT EXISTS tags map<text, text>",  # S3's bucket tagging
    # An S3 conditional write's turn on its key, across gateways (a lightweight transaction; rows live seconds).
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.object_locks (id text PRIMARY KEY, holder uuid)""",
    # Keyed by "/" + prefix (as dir_entries' dir: Cassandra refuses an empty key, the whole store's prefix).
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.retention (
        prefix text PRIMARY KEY, keep_last int, keep_within_s bigint, keep_hourly int, keep_daily int,
        keep_weekly int, keep_monthly int)""",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.snapshots (name text PRIMARY KEY, prefix text, at timestamp)""",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.maintenance (
        name text PRIMARY KEY, holder text, mode text, state text, since timestamp)""",
    f"""CREATE TABLE IF NOT EXISTS {META_KS}.writer_leases (
        writer uuid PRIMARY KEY, kind text, host text, started_at timestamp)""",
]

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Replication:
    """SimpleStrategy with one RF, or NetworkTopologyStrategy with an RF per data centre."""

    strategy: str
    factors: tuple[tuple[str, int], ...]

    @classmethod
    def simple(cls, rf: int) -> "Replication":
        if rf < 1:
            raise CasstorError(f"replication factor {rf}: must be at least 1")
        return cls("SimpleStrategy", (("replication_factor", rf),))

    @classmethod
    def parse_dcs(cls, spec: str) -> "Replication":
        """``'MAINDC:3,BACKUPDC:1'`` -> NetworkTopologyStrategy."""
        factors = []
        for item in spec.split(","):
            dc, _, rf = item.strip().partition(":")
            if not _NAME.match(dc) or not rf.isdigit() or int(rf) < 1:
                raise CasstorError(f"{spec!r}: expected DC:RF[,DC:RF...], e.g. MAINDC:3,BACKUPDC:1")
            factors.append((dc, int(rf)))
        return cls("NetworkTopologyStrategy", tuple(factors))

    def cql(self) -> str:
        parts = [f"'class': '{self.strategy}'"] + [f"'{k}': '{v}'" for k, v in self.factors]
        return "{" + ", ".join(parts) + "}"

    def as_map(self) -> dict[str, str]:
        return {"class": f"org.apache.cassandra.locator.{self.strategy}", **{k: str(v) for k, v in self.factors}}

    def __str__(self) -> str:
        return f"{self.strategy}({', '.join(f'{k}={v}' for k, v in self.factors)})"


DIRECTORY_ROWS = 100_000

# The ranges pyfastcdc's FastCDC 2020 accepts (it raises ValueError outside them, at the first store).
CHUNK_LIMITS = {"chunk_min": (64, 1 << 20), "chunk_avg": (256, 4 << 20), "chunk_max": (1 << 10, 16 << 20)}


@dataclass(frozen=True)
class StoreSettings:
    """What a store was initialised with; every writer must use exactly these."""

    hash: str = BLOCK_HASH
    file_hash: str = FILE_HASH
    chunker: str = "fastcdc-2020"
    # A new store's sizes (docs/benchmarks.md, "Chunk sizes"): against 16/48/256 KiB, a quarter of the rows and
    # requests per MB and 8 % fewer bytes on disk for source release tars (zstd has more context per block),
    # 1 % more for a tree of small source files. An existing store keeps the sizes it recorded.
    chunk_min: int = 64 * 1024
    chunk_avg: int = 192 * 1024
    chunk_max: int = 1024 * 1024
    normalized_chunking: int = 2
    schema_version: int = SCHEMA_VERSION
    compression: str = DEFAULT_COMPRESSION  # new blocks only; the one setting that may change (set_compression)
    # Files of 1 to inline_max bytes are kept in their head row, not deduplicated (casstor_ops.store.engine.inline);
    # 0: none. At most chunk_min: such a file is one block either way.
    inline_max: int = 0
    # Entries a directory bucket holds before the directory splits (casstor_ops.store.namespace.layout): at ~120
    # bytes an entry, ~12 MB a partition, well under Cassandra's 100 MB guidance (docs/schema.md).
    directory_rows: int = DIRECTORY_ROWS

    def __post_init__(self) -> None:
        BlockCodec.parse(self.compression)
        for name, (low, high) in CHUNK_LIMITS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise CasstorError(f"{name.replace('_', ' ')} {value}: FastCDC 2020 takes {low} to {high} bytes")
        if not self.chunk_min <= self.chunk_avg <= self.chunk_max:
            raise CasstorError(f"chunk sizes min {self.chunk_min} / avg {self.chunk_avg} / max {self.chunk_max}: "
                               "need min <= avg <= max")
        if self.directory_rows < 2:
            raise CasstorError(f"directory rows {self.directory_rows}: at least 2")
        if not 0 <= self.inline_max <= self.chunk_min:
            raise CasstorError(f"inline max {self.inline_max}: takes 0 (no inline files) to the chunk minimum "
                               f"({self.chunk_min} bytes)")

    def as_rows(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}

    @classmethod
    def from_rows(cls, rows: dict[str, str]) -> "StoreSettings":
        return cls(**cls.row_values(rows))

    @classmethod
    def row_values(cls, rows: dict[str, str]) -> dict[str, int | str]:
        """The settings ``rows`` record, typed but not validated (what may be refused is compared first)."""
        # Schema 1 did not record the file hash (whole-content BLAKE2b); schema 2 had no compression; schema 3 no
        # inline files.
        # Schema 4 had no directory index: an upgraded store takes the default bound.
        values: dict[str, int | str] = {"file_hash": "blake2b-256", "compression": NONE, "inline_max": 0,
                                        "directory_rows": DIRECTORY_ROWS}
        for f in fields(cls):
            if f.name in rows:
                values[f.name] = int(rows[f.name]) if f.type in ("int", int) else rows[f.name]
        return values


def default_rf(session: Session) -> int:
    """RF 3 once three nodes are up (RF 2 cannot serve QUORUM with one down), else one per node."""
    up = sum(1 for h in session.cluster.metadata.all_hosts() if h.is_up)
    return 3 if up >= 3 else max(1, up)


def replication_map(session: Session, keyspace: str) -> dict[str, str] | None:
    """A keyspace's replication as Cassandra reports it, or None when it does not exist.

    Example::

        >>> replication_map(session, META_KS)   # doctest: +SKIP
        {'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '1'}

    Failures: the driver's errors (an unreachable cluster) propagate.
    """
    row = session.execute(Statements.for_session(session).keyspace_replication, (keyspace,)).one()
    return dict(row.replication) if row else None


def ensure_keyspaces(session: Session, data: Replication | None = None, meta: Replication | None = None,
                     may_change: bool = False) -> None:
    """Create the store's keyspaces that do not exist, with ``data``/``meta`` or (None) the cluster's default.

    An existing keyspace is never asked ``CREATE KEYSPACE IF NOT EXISTS``
    (a role without ``CREATE ON ALL KEYSPACES`` is refused it even then,
    e.g. the ``casstor`` role of a secured cluster, whose keyspaces its
    admin made). It keeps its replication unless an explicit one differs:
    then it is altered if ``may_change`` (the store holds nothing yet), else
    CasstorError, changing nothing.

    Example: ``ensure_keyspaces(admin_session)`` (what ``cluster start --secure`` runs).
    """
    rf = default_rf(session)
    _ensure_keyspace(session, DATA_KS, data or Replication.simple(rf), data is not None, may_change)
    _ensure_keyspace(session, META_KS, meta or Replication.simple(rf), meta is not None, may_change)


def _ensure_keyspace(session: Session, keyspace: str, wanted: Replication, explicit: bool, may_change: bool) -> None:
    existing = replication_map(session, keyspace)
    if existing is None:
        _ddl(session, f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {wanted.cql()}")
    elif explicit and existing != wanted.as_map():
        if not may_change:
            raise CasstorError(
                f"{keyspace} already exists with replication {existing}; refusing to change it to {wanted} "
                f"(use ALTER KEYSPACE and 'nodetool repair' to change replication)")
        _ddl(session, f"ALTER KEYSPACE {keyspace} WITH replication = {wanted.cql()}")


def read_settings(session: Session) -> StoreSettings | None:
    """The recorded settings, or None when the store was never initialised: no ``casstor_meta`` keyspace, no
    settings table in it (a keyspace made by something else, or an interrupted init), or no ``schema_version``
    row in the table (an init that did not finish: :func:`init_store` writes it last).

    Example::

        >>> read_settings(session).chunk_avg           # doctest: +SKIP
        196608

    Failures: a refused permission, a timeout or an unreachable cluster raise
    the one-line CasstorError of :func:`~casstor_ops.cluster.connection.connect_error`
    (``EXIT_UNAUTHORISED``, ``EXIT_TIMEOUT``, ``EXIT_UNREACHABLE``); anything
    else propagates with its traceback.
    """
    return _settings_in(_recorded_rows(session))


def _recorded_rows(session: Session) -> dict[str, str]:
    """The settings table's rows by name; none without the table. Failures: as :func:`read_settings`."""
    st = Statements.for_session(session)
    with reported_as_user_errors(endpoint_of(session), "read the store's settings"):
        try:
            return {r.name: r.value for r in session.execute(st.all_settings)}
        except InvalidRequest:  # preparing the read fails without the table: asked only then (one read fewer)
            if session.execute(st.table_exists, (META_KS, "settings")).one() is None:
                return {}
            raise


def _settings_in(rows: dict[str, str]) -> StoreSettings | None:
    return StoreSettings.from_rows(rows) if "schema_version" in rows else None


def require_settings(session: Session) -> StoreSettings:
    """The recorded settings of a store this casstor can use.

    Example: ``Store(session)`` calls it first. Failures: a store that is not
    initialised, or of a schema ``casstor init`` upgrades (2), raises
    CasstorError ``EXIT_NOT_INITIALISED``; another schema or hash, CasstorError
    (1); a failed settings read, as :func:`read_settings`.
    """
    settings = read_settings(session)
    if settings is None:
        raise CasstorError("the store is not initialised: run 'casstor init'", EXIT_NOT_INITIALISED)
    if settings.schema_version in UPGRADABLE:
        raise CasstorError(f"the store has schema {settings.schema_version}: run 'casstor init' to upgrade it to "
                           f"schema {SCHEMA_VERSION} (adds columns; stored blocks stay as they are)",
                           EXIT_NOT_INITIALISED)
    found = (settings.schema_version, settings.hash, settings.file_hash)
    if found != (SCHEMA_VERSION, BLOCK_HASH, FILE_HASH):
        raise CasstorError(f"the store has schema {found[0]} (block hash {found[1]}, file hash {found[2]}); this "
                           f"casstor reads schema {SCHEMA_VERSION} ({BLOCK_HASH}, {FILE_HASH}) only: restore its "
                           f"files with the casstor that wrote them, and store them in a new store")
    return settings


def init_store(session: Session, data: Replication | None = None, meta: Replication | None = None,
               settings: StoreSettings | None = None,
               log: Callable[[str], None] = lambda msg: None, copier: HeadCopier = copy_heads) -> StoreSettings:
    """Create keyspaces and tables and record the settings; idempotent.

    ``data``/``meta`` None means "the default for this cluster" and never
    conflicts with an existing keyspace; ``settings`` None means the defaults
    for a new store and, for an existing one, its own chunk sizes (stores
    made before the default changed keep cutting as they did). An explicit
    value that differs from
    the replication of a keyspace that holds a store, or settings that differ
    from the recorded ones, raise :class:`CasstorError` and change nothing
    (keyspaces made empty, as ``cluster start --secure`` does, take the
    explicit value). The compression of
    ``settings`` applies to a new store only: an existing one keeps its own
    (:func:`set_compression` changes it). A store of an upgradable schema is
    upgraded once its new columns exist, all or nothing: everything is
    checked before the first write (a refused upgrade leaves the store as it
    was), and ``schema_version`` is written last (an upgrade cut short leaves
    the old version, which this casstor refuses until a re-run of ``casstor
    init`` completes it). The upgrade runs in the offline maintenance window,
    so writers of the older schema can neither race its copy nor start until
    it is recorded (:mod:`casstor_ops.store.namespace.upgrade`); ``log`` gets
    its progress lines, and ``copier`` copies the heads (in this process by
    default; ``casstor upgrade`` passes a Spark job's).
    """
    rows = _recorded_rows(session)
    before = _settings_in(rows)
    wanted = settings or _defaults_for(before)
    writes = rows_to_record(rows, wanted)
    ensure_keyspaces(session, data, meta, may_change=before is None)
    for ddl in _TABLES:  # the blocks table's compression applies to a new store only (CREATE IF NOT EXISTS)
        _ddl(session, ddl.replace("{node_compression}", _node_compression(wanted.compression)))
    session.cluster.control_connection.wait_for_schema_agreement()
    st = Statements.for_session(session)
    upgrading = before is not None and "schema_version" in writes
    with upgrade_window(session, log) if upgrading else nullcontext() as window:
        for name, value in writes.items():  # only an upgrade's schema_version replaces a row
            if name == "schema_version" and upgrading:
                _copy_schema_4_heads(session, wanted.directory_rows, log, copier)
                window.fence(f"recording schema {SCHEMA_VERSION}")
            session.execute(st.write_setting if name in rows else st.record_setting, (name, value))
    rows = _recorded_rows(session)
    rows_to_record(rows, wanted)  # refuses what a concurrent init with other settings recorded first
    return StoreSettings.from_rows(rows)


def _copy_schema_4_heads(session: Session, directory_rows: int, log: Callable[[str], None],
                         copier: HeadCopier) -> None:
    """An upgrade's last step before its ``schema_version``: the heads of ``files`` as versions and entries."""
    if session.execute(Statements.for_session(session).table_exists, (META_KS, "files")).one() is None:
        return
    for ddl in SCHEMA_4_COLUMNS:
        _ddl(session, ddl)
    session.cluster.control_connection.wait_for_schema_agreement()
    copier(session, directory_rows, log)


def rows_to_record(recorded: dict[str, str], wanted: StoreSettings) -> dict[str, str]:
    """The settings rows that make ``wanted`` the settings of a store that has the ``recorded`` rows, in the order
    to write them: the missing ones, then ``schema_version`` (new, or raised by an upgrade), which vouches for them.

    A recorded row is kept (so a re-run of an init or an upgrade that was cut short completes it); an existing
    store (one with a ``schema_version``) keeps its compression whatever ``wanted`` says.

    Example: ``rows_to_record({**rows_of_a_schema_3_store}, replace(its_settings, inline_max=16384))`` ->
    ``{"inline_max": "16384", "schema_version": "4"}``; ``{}`` when the rows already are ``wanted``'s.

    Failures: a recorded setting that differs from ``wanted`` raises CasstorError naming each one.
    """
    initialised = "schema_version" in recorded
    rows = {**wanted.as_rows(), **recorded}
    if initialised and int(recorded["schema_version"]) in UPGRADABLE:
        rows["schema_version"] = str(SCHEMA_VERSION)
    if initialised and "compression" not in recorded:  # schema 2: recorded none, and reads as none
        del rows["compression"]
    diffs = [f"{k}={v} (asked {getattr(wanted, k)})" for k, v in StoreSettings.row_values(rows).items()
             if k != "compression" and getattr(wanted, k) != v]
    if diffs:
        raise CasstorError(f"the store is already initialised with {', '.join(diffs)}; refusing to change it "
                           f"(blocks chunked or hashed differently would never deduplicate)")
    missing = {name: value for name, value in rows.items() if recorded.get(name) != value}
    version = missing.pop("schema_version", None)
    return missing if version is None else {**missing, "schema_version": version}


def _defaults_for(before: StoreSettings | None) -> StoreSettings:
    """The settings ``init_store`` asks for when given none: a new store gets the defaults; an existing one keeps
    its chunk sizes (a store made before the defaults changed cuts as it always did) and its inline maximum (an
    upgraded store records none), and is checked for the rest."""
    if before is None:
        return StoreSettings()
    return replace(StoreSettings(), **{name: getattr(before, name) for name in (*CHUNK_LIMITS, "inline_max")})


def set_compression(session: Session, spec: str) -> StoreSettings:
    """Write new blocks with ``spec`` (``"zstd:3"``, ``"none"``) from now on; blocks already stored stay as they
    are (each records its codec). The blocks table's own compression follows (NoopCompressor for zstd, LZ4
    for raw blocks; SSTables already written keep theirs until compacted). Returns the store's settings.

    Example: ``set_compression(session, "zstd:6").compression`` -> ``'zstd:6'``.
    Failures: a bad spec, or a store this casstor cannot use, as
    :meth:`BlockCodec.parse <casstor_ops.store.blocks.codec.BlockCodec.parse>` and :func:`require_settings`.
    """
    spec = BlockCodec.parse(spec).spec
    require_settings(session)
    _ddl(session, f"ALTER TABLE {DATA_KS}.blocks WITH compression = {_node_compression(spec)}")
    session.cluster.control_connection.wait_for_schema_agreement()
    session.execute(Statements.for_session(session).write_setting, ("compression", spec))
    return require_settings(session)


def _ddl(session: Session, cql: str) -> None:
    """Run a schema statement (never prepared; its only variable parts are validated constants)."""
    session.execute(SimpleStatement(cql, consistency_level=ConsistencyLevel.ONE))
