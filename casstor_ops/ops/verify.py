"""fsck for the store: re-hash every block, resolve every retained version's block list or inline content, diff
the index.

Shaped like Cassandra's row-level repair: find exactly the rows that
differ, then fix only those. :func:`verify` reads the blob table through
the connector's token-range splits (small pages, hashing in the
executors: the driver never pages through content), compares, then
*confirms* each difference with point reads on the executors before
counting it (a store or a reclaim running meanwhile moves the tables
between the scans; a difference that is gone is not reported) and, with
``repair_index``, fixes the index rows that differ.

Problem kinds (:class:`Problem`, the keys of ``VerifyReport.problems``):

Corruption (exit :data:`~casstor_ops.errors.EXIT_CORRUPT`, never repaired here):

* ``corrupt_blocks``: content that does not decode (by its codec,
  :mod:`casstor_ops.store.blocks.codec`) to exactly its ``size`` bytes, or whose
  plaintext's BLAKE2b-256 is not its key (bit rot, a torn write);
Every *retained* version is checked, not only heads: each version row that is
not a delete marker (:func:`~casstor_ops.spark.references.retained_versions`:
the older versions a retention policy or snapshot keeps are restorable, so
they must be intact too). A version is named ``ID@VERSION`` in the examples.

* ``missing_blocks``: blocks a retained version names that have no content row;
* ``broken_block_lists``: retained versions whose block list does not add
  up to the version row's block count and size, or does not hash to its
  file hash (:func:`~casstor_ops.store.blocks.hashing.file_hash`: a row altered, lost
  or reordered), checked without reading a block. A version's list is
  gathered in one executor (~40 bytes a block: 25 MB for a 30 GB file).
  An inline version (``blocks`` 0, a size over 0) has no list: it is checked as below;
* ``corrupt_inline_files``: inline versions (:mod:`casstor_ops.store.engine.inline`)
  whose content is absent, does not decode to the version's size, or does not
  hash to its file hash. The content is in the version row and nowhere else:
  there is no other copy in the store to repair it from.

``damaged_files`` counts the retained versions whose list names a missing or
corrupt block (``damaged_examples``: the first few, ``ID@VERSION``).

Index (``existing_blocks`` vs ``blocks``; fixed by ``repair_index``):

* ``index_without_block``: an index row whose block has no content row. The
  store trusts the index, so it would never upload that block again. Repair
  deletes the row, so the next store of that content uploads it; if a file
  references the block it is *also* counted in ``missing_blocks`` (before
  and after the repair): the corruption is reported, never hidden;
* ``index_of_corrupt_block``: an index row vouching for a corrupt block.
  Repair deletes it for the same reason: the next store of that content
  overwrites the bad copy (the block stays in ``corrupt_blocks`` until then);
* ``block_without_index``: an intact block without index row (a store or
  reclaim killed between its two writes). Repair inserts the row;
* ``index_size_mismatch``: an index row whose size is not the intact
  block's plaintext length. Repair rewrites it (with the stored length).

Example::

    >>> report = verify(spark, repair_index=True)   # doctest: +SKIP
    >>> print(report.table())                       # doctest: +SKIP
    >>> report.exit_code                            # doctest: +SKIP
    3

Repairs and reclaim: ``repair_index`` holds the reclaim window, in online
mode (:class:`~casstor_ops.store.coordination.reclaim_window.RepairWindow`: stores keep
running, no reclaim starts). Reclaim deletes a block's index row, waits,
then deletes its content at an older timestamp T; a repair in between
sees "block without index", writes the row back at a fresh timestamp, and
leaves it vouching for deleted content: later stores skip uploading that
block and commit files that cannot be restored. Writing repairs at
timestamps the reclaim's proof accounts for was the other way, and was
rejected: the only timestamp known to be safe is the content row's write
time, and an index row deleted after that (by a reclaim, or by hand)
shadows such a repair, so the repair would silently do nothing. Holding
the window is exact (an LWT) and costs a reclaim only a later start.

Failures: an uninitialised store raises
:class:`~casstor_ops.errors.CasstorError`; ``repair_index`` while a window
is open (a reclaim running, or a crashed one to resume or clear) raises
:class:`~casstor_ops.errors.MaintenanceError` (exit 5, one line), and a
reclaim started during a repair is refused the same way. Problems found
are returned, not raised.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from cassandra.cluster import Session
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from casstor_ops.cluster.connection import Endpoint, connect, endpoint_from_env
from casstor_ops.errors import EXIT_CORRUPT
from casstor_ops.spark.executor_store import store_for
from casstor_ops.spark.references import (block_rows, head_block_lists, is_inline, missing_blocks, referenced_blocks,
                                          retained_versions, retained_with_content, stored_blocks)
from casstor_ops.store.blocks.block_list import file_hash_of, read
from casstor_ops.store.blocks.codec import DamagedBlock, decode
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.coordination.reclaim_window import RepairWindow
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.inline import plaintext
from casstor_ops.store.records import InlineContent
from casstor_ops.store.schema import require_settings



class Problem(StrEnum):
    """A problem kind (see the module docstring); its value names it in the report, its JSON and Spark's rows."""

    CORRUPT_BLOCKS = "corrupt_blocks"
    MISSING_BLOCKS = "missing_blocks"
    BROKEN_BLOCK_LISTS = "broken_block_lists"
    CORRUPT_INLINE_FILES = "corrupt_inline_files"
    INDEX_WITHOUT_BLOCK = "index_without_block"
    INDEX_OF_CORRUPT_BLOCK = "index_of_corrupt_block"
    BLOCK_WITHOUT_INDEX = "block_without_index"
    INDEX_SIZE_MISMATCH = "index_size_mismatch"


CORRUPTION = (Problem.CORRUPT_BLOCKS, Problem.MISSING_BLOCKS, Problem.BROKEN_BLOCK_LISTS, Problem.CORRUPT_INLINE_FILES)
INDEX = (Problem.INDEX_WITHOUT_BLOCK, Problem.INDEX_OF_CORRUPT_BLOCK, Problem.BLOCK_WITHOUT_INDEX,
         Problem.INDEX_SIZE_MISMATCH)
EXAMPLES = 5


@dataclass
class VerifyReport:
    """Counts per problem kind (see the module docstring), examples, and what was repaired."""

    blocks_checked: int
    bytes_checked: int
    problems: dict[Problem, int]
    examples: dict[Problem, list[str]]
    repaired: dict[Problem, int] = field(default_factory=dict)
    damaged_files: int = 0
    damaged_examples: list[str] = field(default_factory=list)

    def remaining(self, kind: Problem) -> int:
        return self.problems[kind] - self.repaired.get(kind, 0)

    @property
    def corrupt(self) -> bool:
        return any(self.problems[k] for k in CORRUPTION)

    @property
    def exit_code(self) -> int:
        """EXIT_CORRUPT for corruption or index rows left wrong, else 0."""
        return EXIT_CORRUPT if self.corrupt or any(self.remaining(k) for k in INDEX) else 0

    def as_dict(self) -> dict:
        return {"blocks_checked": self.blocks_checked, "bytes_checked": self.bytes_checked,
                "problems": self.problems, "repaired": self.repaired, "examples": self.examples,
                "damaged_files": self.damaged_files, "damaged_examples": self.damaged_examples,
                "exit_code": self.exit_code}

    def table(self) -> str:
        lines = [f"verify: {self.blocks_checked:,} blocks re-hashed ({self.bytes_checked:,} bytes)",
                 f"  {'problem':26} {'found':>10} {'repaired':>10}  examples"]
        for kind in Problem:
            repaired = f"{self.repaired[kind]:,}" if kind in self.repaired else "-"
            lines.append(f"  {kind:26} {self.problems[kind]:>10,} {repaired:>10}  "
                         f"{', '.join(self.examples.get(kind, []))}")
        if self.damaged_files:
            lines.append(f"  file versions referencing missing or corrupt blocks: {self.damaged_files:,} "
                         f"(e.g. {', '.join(self.damaged_examples)})")
        if self.exit_code == 0:
            lines.append("  no problems" if not any(self.problems.values()) else "  index repaired; no corruption")
        elif not self.corrupt:
            lines.append("  index rows differ from the blocks: run with --repair-index")
        else:
            lines.append("  CORRUPTION: restore affected files from another copy and store them again")
        return "\n".join(lines)


# -- reading and hashing ------------------------------------------------------------------------

def _plain_digest(codec: str | None, content: bytes | None, size: int | None) -> bytes | None:
    """The hash of a block row's plaintext, or None when it has no content or does not decode to ``size``."""
    if content is None or size is None:
        return None
    try:
        return block_hash(decode(codec, content, size))
    except DamagedBlock:
        return None


def is_intact(key: bytes, size: int | None, codec: str | None, content: bytes | None) -> bool:
    """The executors' re-check of one block row: the same test as :func:`block_status`."""
    return _plain_digest(codec, content, size) == key


def inline_problem(size: int | None, digest: bytes | None, codec: str | None, content: bytes | None) -> str | None:
    """What is wrong with an inline version's content (:func:`casstor_ops.store.engine.inline.plaintext`); None: intact.

    Run in the executors twice: over the scanned versions (a Python UDF) and on the point re-read that confirms one.
    """
    if content is None:
        return "it has no content"
    found = plaintext(size or 0, bytes(digest or b""), InlineContent(codec, bytes(content)))
    return found if isinstance(found, str) else None


def block_status(spark: SparkSession) -> DataFrame:
    """``(hash, size, length, stored, intact)`` per block row: content decoded and re-hashed in the executors (a
    Python UDF). ``length`` is the plaintext's (the size, for an intact block; null for a damaged one),
    ``stored`` the content's length as stored (after compression)."""
    digest = F.udf(_plain_digest, T.BinaryType())
    hashed = block_rows(spark, "hash", "size", "codec", "content").select(
        "hash", "size", F.length("content").cast("long").alias("stored"),
        digest("codec", "content", "size").alias("digest"))
    intact = F.coalesce(F.col("digest") == F.col("hash"), F.lit(False))
    return hashed.select("hash", "size", F.when(intact, F.col("size")).cast("long").alias("length"), "stored",
                         intact.alias("intact"))


# -- candidates and their confirmation on the executors -----------------------------------------

_CANDIDATE = T.StructType([
    T.StructField("kind", T.StringType()), T.StructField("hash", T.BinaryType()),
    T.StructField("length", T.LongType()), T.StructField("stored", T.LongType()), T.StructField("id", T.StringType()),
    T.StructField("version", T.StringType()), T.StructField("size", T.LongType()),
    T.StructField("blocks", T.IntegerType())])


def _as_candidates(kind: Problem | None, df: DataFrame) -> DataFrame:
    """``df``'s rows in the common candidate shape (absent columns null; ``kind`` None: df has one)."""
    columns = [(F.col(f.name) if f.name in df.columns else F.lit(None)).cast(f.dataType).alias(f.name)
               for f in _CANDIDATE.fields[1:]]
    return df.select(F.lit(kind).alias("kind") if kind else F.col("kind"), *columns)


def _nulls(**types: str) -> list[F.Column]:
    return [F.lit(None).cast(t).alias(name) for name, t in types.items()]


def _candidates(spark: SparkSession, status: DataFrame, inline_max: int) -> DataFrame:
    # Index rows and block rows side by side per hash: a union and a group-by, not a full outer join
    # (the connector's direct join rewrote one into a right join that lost the index side's columns).
    index = stored_blocks(spark).select("hash", F.col("size").cast("long").alias("index_size"),
                                        F.lit(True).alias("indexed"),
                                        *_nulls(length="long", stored="long", intact="boolean"))
    blocks = status.select("hash", *_nulls(index_size="long", indexed="boolean"), "length", "stored", "intact")
    both = index.unionByName(blocks).groupBy("hash").agg(
        *[F.max(c).alias(c) for c in ("index_size", "indexed", "length", "stored", "intact")])
    has_block, indexed = F.col("intact").isNotNull(), F.col("indexed").isNotNull()
    lists = (retained_block_lists(spark).groupBy("id", "version")
             .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("size").cast("long")).alias("bytes"),
                  F.sort_array(F.collect_list(F.struct("block_offset", "hash"))).alias("entries")))
    versions = retained_with_content(spark, inline_max)
    # An inline version has no list: its content is checked instead (decoded and hashed in a Python UDF).
    problem = F.udf(inline_problem, T.StringType())
    corrupt_inline = versions.where(is_inline()).where(problem("size", "hash", "codec", "content").isNotNull())
    broken = versions.where(~is_inline()).select("id", "version", "size", "blocks", "hash").join(
        lists, ["id", "version"], "left").where(
        (F.coalesce("n", F.lit(0)) != F.coalesce("blocks", F.lit(0)))
        | (F.coalesce("bytes", F.lit(0)) != F.coalesce("size", F.lit(0)))
        | ~_list_hash("entries").eqNullSafe(F.col("hash")))
    # One classification over the index/blocks join (each row differs in at most one way).
    kind = (F.when(indexed & ~has_block, Problem.INDEX_WITHOUT_BLOCK)
            .when(indexed & ~F.col("intact"), Problem.INDEX_OF_CORRUPT_BLOCK)
            .when(~indexed & F.col("intact"), Problem.BLOCK_WITHOUT_INDEX)
            .when(indexed & ~F.col("index_size").eqNullSafe(F.col("length")), Problem.INDEX_SIZE_MISMATCH))
    index_diffs = both.select(kind.alias("kind"), "hash", "length", "stored").where(F.col("kind").isNotNull())
    return (_as_candidates(Problem.MISSING_BLOCKS, missing_blocks(status, referenced_blocks(spark, lists=retained_block_lists(spark))))
            .unionByName(_as_candidates(Problem.BROKEN_BLOCK_LISTS, broken))
            .unionByName(_as_candidates(Problem.CORRUPT_INLINE_FILES, corrupt_inline))
            .unionByName(_as_candidates(None, index_diffs)))


def retained_block_lists(spark: SparkSession) -> DataFrame:
    """The block lists of every retained version (each checked, as reclaim keeps each)."""
    return head_block_lists(spark, head_rows=retained_versions(spark))


@F.udf(T.BinaryType())
def _list_hash(entries: list | None) -> bytes:
    """The file hash of a block list (``(block_offset, hash)`` structs in offset order; None: no rows)."""
    return file_hash(bytes(entry.hash) for entry in entries or [])


class _Checks:
    """Point reads that confirm a candidate still differs, and the index writes that fix one."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.st = Statements.for_session(session)

    def _index(self, key: bytes):
        return self.session.execute(self.st.index_size, (key,)).one()

    def _block(self, key: bytes):
        return self.session.execute(self.st.block_row, (key,)).one()

    def _still_retained(self, row):
        """``row``'s version re-read, or None when forget dropped it since the scan (then its list or content is
        no version's any more: nothing to report). Forget deletes the row before the list, so a list read
        while the row is still there is whole or being dropped with a row that is gone by the next read."""
        found = self.session.execute(self.st.one_version, (row.id, uuid.UUID(row.version))).one()
        return found if found is not None and not found.deleted else None

    def _list_differs(self, row) -> bool:
        version = self._still_retained(row)
        if version is None:
            return False
        rows = read(self.session, self.st, version)
        return ((len(rows), sum(size for _, _, size in rows)) != (version.blocks or 0, version.size or 0)
                or file_hash(digest for _, digest, _ in rows) != file_hash_of(version))

    def _inline_differs(self, row) -> bool:
        version = self._still_retained(row)
        return version is not None and inline_problem(version.size, version.hash, version.codec,
                                                      version.content) is not None

    def still_differs(self, row) -> bool:
        if row.kind == Problem.BROKEN_BLOCK_LISTS:
            return self._list_differs(row)
        if row.kind == Problem.CORRUPT_INLINE_FILES:
            return self._inline_differs(row)
        key = bytes(row.hash)
        if row.kind == Problem.MISSING_BLOCKS:
            return self._block(key) is None
        index = self._index(key)
        if row.kind == Problem.BLOCK_WITHOUT_INDEX:
            return index is None and self._block(key) is not None
        if index is None:
            return False
        if row.kind == Problem.INDEX_SIZE_MISMATCH:
            return index.size != row.length
        block = self._block(key)
        if row.kind == Problem.INDEX_WITHOUT_BLOCK:
            return block is None
        return block is not None and not is_intact(key, block.size, block.codec, block.content)  # corrupt

    def fix(self, row) -> bool:
        key = bytes(row.hash)
        if row.kind in (Problem.INDEX_WITHOUT_BLOCK, Problem.INDEX_OF_CORRUPT_BLOCK):
            self.session.execute(self.st.delete_index, (key,))
        else:  # block_without_index, index_size_mismatch: the intact block's real lengths
            self.session.execute(self.st.insert_existing, (key, row.length, row.stored))
        return True


@dataclass
class Tally:
    """The confirmed differences of one problem kind: how many, how many repaired, the first :data:`EXAMPLES`."""

    found: int = 0
    repaired: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        self.found += other.found
        self.repaired += other.repaired
        self.examples = (self.examples + other.examples)[:EXAMPLES]


def _confirm(endpoint: Endpoint, repair: bool) -> Callable[[Iterable], Iterator[dict[str, Tally]]]:
    """A ``mapPartitions`` function: per partition, one summary ``{kind: Tally}``."""

    def run(rows: Iterable) -> Iterator[dict[str, Tally]]:
        checks: _Checks | None = None
        summary: dict[str, Tally] = {}
        for row in rows:
            checks = checks or _Checks(store_for(endpoint).session)
            if not checks.still_differs(row):
                continue
            tally = summary.setdefault(row.kind, Tally())
            tally.found += 1
            tally.repaired += int(repair and row.kind in INDEX and checks.fix(row))
            if len(tally.examples) < EXAMPLES:
                tally.examples.append(f"{row.id}@{row.version}" if row.id is not None else bytes(row.hash).hex())
        yield summary

    return run


def _merge(summaries: Iterable[dict[str, Tally]]) -> dict[str, Tally]:
    merged: dict[str, Tally] = {}
    for summary in summaries:
        for kind, tally in summary.items():
            merged.setdefault(kind, Tally()).add(tally)
    return merged


# -- driver -------------------------------------------------------------------------------------

def verify(spark: SparkSession, repair_index: bool = False, endpoint: Endpoint | None = None) -> VerifyReport:
    """Check every block, block list and index row (see the module docstring); repair the index if asked."""
    endpoint = endpoint or endpoint_from_env()
    session = connect(endpoint, start=False)
    try:
        inline_max = require_settings(session).inline_max
        with RepairWindow(session) if repair_index else contextlib.nullcontext():
            return _verify(spark, endpoint, repair_index, inline_max)
    finally:
        session.cluster.shutdown()


def _verify(spark: SparkSession, endpoint: Endpoint, repair: bool, inline_max: int) -> VerifyReport:
    # The blob table is read once: everything after this uses the persisted status.
    status = block_status(spark).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        checked = status.agg(F.count(F.lit(1)).alias("n"), F.sum("length").alias("bytes"),
                             F.sum((~F.col("intact")).cast("long")).alias("corrupt")).first()
        corrupt = status.where(~F.col("intact"))
        candidates = _candidates(spark, status, inline_max)
        merged = _merge(candidates.rdd.mapPartitions(_confirm(endpoint, repair)).collect())
        problems = {kind: merged.get(kind, Tally()).found for kind in Problem}
        problems[Problem.CORRUPT_BLOCKS] = checked.corrupt or 0
        examples = {kind: tally.examples for kind, tally in merged.items()}
        examples[Problem.CORRUPT_BLOCKS] = [bytes(r.hash).hex() for r in corrupt.limit(EXAMPLES).collect()]
        report = VerifyReport(checked.n, checked.bytes or 0, problems, examples,
                              repaired={k: merged.get(k, Tally()).repaired for k in INDEX} if repair else {})
        if problems[Problem.CORRUPT_BLOCKS] or problems[Problem.MISSING_BLOCKS]:
            bad = corrupt.select("hash").unionByName(
                missing_blocks(status, referenced_blocks(spark, lists=retained_block_lists(spark))).select("hash"))
            damaged = retained_block_lists(spark).join(bad, "hash", "left_semi").select("id", "version").distinct()
            report.damaged_files = damaged.count()
            report.damaged_examples = [f"{r.id}@{r.version}"
                                       for r in damaged.orderBy("id", "version").limit(EXAMPLES).collect()]
        return report
    finally:
        status.unpersist()
