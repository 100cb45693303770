"""Small files in batches (`casstor_ops.store.engine.batch_upload`): the grouping, and the order of a batch's requests.

A fake session answers every request at once and records it (statement, rows); a fake batch statement records
the rows added to it; the fence records its call among the requests.
"""

from __future__ import annotations

import io
import random
import time
from types import SimpleNamespace

import pytest

from casstor_ops.store.blocks import block_uploads, existence
from casstor_ops.store.bulk.tree import small_batches
from casstor_ops.store.cql import request_queue
from casstor_ops.store.cql.request_queue import UNLOGGED_BATCH_BYTES, query_batches, row_batches
from casstor_ops.store.cql.statements import Query
from casstor_ops.store.engine import batch_upload as batch_module
from casstor_ops.store.engine import commit as commit_module
from casstor_ops.store.engine.batch_upload import BatchUpload, SmallFile, block_owners
from casstor_ops.store.records import StoreResult
from casstor_ops.store.schema import StoreSettings
from casstor_ops.store.trees.source_listing import SourceFile

SETTINGS = StoreSettings(chunk_min=16 * 1024, chunk_avg=48 * 1024, chunk_max=256 * 1024)
STATEMENTS = SimpleNamespace(**{name: name for name in (
    "existing", "insert_block", "insert_existing", "claim_block", "release_claim", "insert_file_block",
    "insert_version")}, plain_rows=None)


class FakeBatch:
    made: list[FakeBatch] = []

    def __init__(self, kind) -> None:
        self.statement, self.rows = None, []
        FakeBatch.made.append(self)

    def add(self, statement, row) -> None:
        self.statement = statement
        self.rows.append(row)


class FakeFuture:
    def __init__(self, rows) -> None:
        self._rows = rows

    def add_callbacks(self, ok, error) -> None:
        ok(self._rows)

    def result(self):
        return self._rows


class FakeSession:
    """Answers at once; ``requests`` is every request as (statement, rows), in order; ``stored``: blocks it has."""

    def __init__(self, stored=()) -> None:
        self.requests: list[tuple[str, int]] = []
        self.versions: list[tuple[str, set]] = []  # (statement, the versions its rows name) of lists and heads
        self.stored = set(stored)

    def execute_async(self, statement, params=None, timeout=None, execution_profile=None) -> FakeFuture:
        if isinstance(statement, FakeBatch):
            self.requests.append((statement.statement, len(statement.rows)))
            if statement.statement in ("insert_file_block", "insert_version"):
                self.versions.append((statement.statement, {row[1] for row in statement.rows}))
            return FakeFuture([[True]] if statement.statement == "claim_block" else [])
        self.requests.append((statement, 1))
        if statement == "existing":
            return FakeFuture([(digest,) for digest in params[0] if digest in self.stored])
        return FakeFuture([])


class FakeEntries:
    def __init__(self) -> None:
        self.published: list[str] = []

    def publish(self, info, stored_size=None) -> None:
        self.published.append(info.id)

    def flush(self) -> None:
        pass


@pytest.fixture(autouse=True)
def fake_batches(monkeypatch) -> None:
    monkeypatch.setattr(request_queue, "BatchStatement", FakeBatch)


def _run(session: FakeSession, files: list[SmallFile]) -> tuple[list, FakeEntries]:
    entries = FakeEntries()
    batch = BatchUpload(session, SETTINGS, STATEMENTS, fence=lambda before: session.requests.append(("fence", 0)),
                        entries=entries)
    return batch.run_batch(files), entries


def _files() -> list[SmallFile]:
    rng = random.Random(5)
    files = [SmallFile(f"d/f{n}", rng.randbytes(1_000 + n)) for n in range(40)]
    return files + [SmallFile("d/copy", files[0].source), SmallFile("d/multi", rng.randbytes(300_000))]


def test_each_step_goes_for_the_whole_batch_in_few_requests_and_in_the_commit_order() -> None:
    """42 files (40 of one block, a copy, one of several blocks): one existence check, then contents and index
    rows, then the block lists in one batch, then the fence, then the heads in one batch; every file's entry after
    its head; the copy counts no new block."""
    session = FakeSession()
    results, entries = _run(session, _files())
    kinds = [statement for statement, _ in session.requests]
    first, last = ({k: f(i for i, s in enumerate(kinds) if s == k) for k in set(kinds)} for f in (min, max))
    assert kinds.count("existing") == 1 and kinds.count("insert_file_block") == 1 \
        and kinds.count("insert_version") == 1 and kinds.count("fence") == 1
    assert last["existing"] < first["insert_block"] and last["insert_block"] < first["insert_file_block"]
    assert last["insert_existing"] < first["insert_file_block"] < first["fence"] < first["insert_version"]
    assert ("insert_version", 42) in session.requests
    assert all(isinstance(r, StoreResult) for r in results) and entries.published == [f.id for f in _files()]
    assert [r.new_blocks for r in results[:41]] == [1] * 40 + [0] and results[41].new_blocks == results[41].blocks > 1
    assert kinds.count("claim_block") >= 1  # only the multi-block file's blocks are claimed; lone ones are not


def test_blocks_found_are_not_uploaded_and_a_failing_reader_fails_only_itself() -> None:
    """Every block already stored: no content, index row or claim is sent, each file counts no new block; a
    reader that fails with EIO leaves an OSError in its place and the others are committed."""
    class Failing(io.RawIOBase):
        def read(self, size: int = -1) -> bytes:
            raise OSError(5, "Input/output error")

    files = _files()
    first = FakeSession()
    _run(first, files)
    again = FakeSession(stored={row for row in _all_hashes(files)})
    results, entries = _run(again, [*files[:3], SmallFile("d/eio", Failing()), files[3]])
    # the four are one-block files: their heads carry their lists (casstor_ops.store.blocks.block_list), none is written
    assert {s for s, _ in again.requests} == {"existing", "fence", "insert_version"}
    assert isinstance(results[3], OSError) and [r.new_blocks for r in results if isinstance(r, StoreResult)] == [0] * 4
    assert entries.published == [f.id for f in files[:4]]


def _all_hashes(files: list[SmallFile]) -> set[bytes]:
    session, entries = FakeSession(), FakeEntries()
    batch = BatchUpload(session, SETTINGS, STATEMENTS, entries=entries)
    batch.run_batch(files)
    return set(batch._uploads.verified)


class SteppedClock:
    """The real clock, whose monotonic time ``step`` moves on (a slow request, without waiting for it)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset

    def __getattr__(self, name: str):
        return getattr(time, name)


def test_no_head_is_sent_past_the_bound_the_batch_commits_new_versions(monkeypatch) -> None:
    """Injects a first write of the block lists that takes 2 s (the least bound, which a quick batch's first attempt
    holds itself to, is 1 s). Checks that no head of those versions is sent: the lists are written again with new
    versions (under the store's own bound, 300 s here), and the heads name those (and the one-block files' new
    versions, which have no list rows); every file commits."""
    clock = SteppedClock()
    for module in (batch_module, commit_module, block_uploads, existence):
        monkeypatch.setattr(module, "time", clock)
    monkeypatch.setattr(batch_module, "commit_bound_s", lambda session: 300)
    real = BatchUpload._write_lists

    def slow_first(self, items) -> None:
        real(self, items)
        if not getattr(self, "_slowed", False):
            self._slowed = True
            clock.offset += 2.0

    monkeypatch.setattr(BatchUpload, "_write_lists", slow_first)
    session = FakeSession()
    results, _ = _run(session, _files())
    (_, first_list), (_, second_list), (head, heads) = session.versions
    assert head == "insert_version" and second_list < heads and not heads & first_list
    assert {r.version for r in results} == heads


def test_small_blocks_go_several_to_a_content_request_each_within_the_bound() -> None:
    """120 files of one small compressible block each and one of a block larger than the content bound: the small
    blocks' content goes in few requests, none carrying more than UNLOGGED_BATCH_BYTES of content, the large block
    alone; every block is written once, and every index row after its content."""
    FakeBatch.made.clear()
    rng = random.Random(7)
    files = [SmallFile(f"d/s{n}", rng.randbytes(600) * 3) for n in range(120)]  # ~600 B of content each
    files.append(SmallFile("d/large", rng.randbytes(UNLOGGED_BATCH_BYTES + 1)))
    session = FakeSession()
    results, _ = _run(session, files)
    content = [batch.rows for batch in FakeBatch.made if batch.statement == "insert_block"]
    written = [n for statement, n in session.requests if statement == "insert_block"]  # a request's blocks each
    assert sum(written) == 121 and all(isinstance(r, StoreResult) for r in results)
    assert len(written) - len(content) == 1 and len(content) <= 4  # the large block alone, the others in batches
    assert all(sum(len(row[3]) for row in rows) <= UNLOGGED_BATCH_BYTES for rows in content)
    written_before: set[bytes] = set()
    for batch in FakeBatch.made:  # in the order they were made, which is the order they were sent
        if batch.statement == "insert_block":
            written_before.update(row[0] for row in batch.rows)
        elif batch.statement == "insert_existing":
            assert all(row[0] in written_before or row[1] > UNLOGGED_BATCH_BYTES for row in batch.rows)


def test_rows_are_cut_by_count_and_by_bytes() -> None:
    rows = [(b"k" * 100, n) for n in range(300)]
    assert [len(g) for g in row_batches(rows)] == [128, 128, 44]
    assert [len(g) for g in row_batches(rows, max_bytes=1_000)] == [8] * 37 + [4]
    assert row_batches([(b"x" * 50_000,), (b"y",)]) == [[(b"x" * 50_000,)], [(b"y",)]]


def test_queries_are_cut_by_their_values_bytes_not_their_statements() -> None:
    queries = [Query("a statement whose text is long" * 100, (b"v" * 100, n)) for n in range(20)]
    assert [len(g) for g in query_batches(queries, max_bytes=1_000)] == [8, 8, 4]
    assert query_batches(queries[:2]) == [queries[:2]]


def test_lone_small_blocks_are_told_apart() -> None:
    distinct, lone = block_owners([([b"a"], False), ([b"b", b"c"], False), ([b"d"], False), ([b"e"], True)],
                                  chunk_min=100, sizes=[[50], [200, 60], [150], [10]])
    assert distinct == [b"a", b"b", b"c", b"d"] and lone == {b"a"}


def test_a_tree_is_cut_into_batches_by_count_and_bytes() -> None:
    files = [SourceFile(f"{d}/{n}", f"{d}/{n}", size) for d, n, size in
             [("a", 1, 10), ("a", 2, 600_000), ("a", 3, 600_000), ("a", 4, -1), ("a", 5, 5), ("b", 1, 5),
              ("b", 2, 2 << 20)]]
    items = small_batches(files, max_files=3, max_bytes=1 << 20)
    # unknown size and over SMALL_FILE_BYTES: alone, first; a/3 would take a/1's batch past 1 MiB; b/1 joins a
    # neighbour's
    assert [[e.path for e in i] if isinstance(i, list) else i.path for i in items] == \
        ["a/4", "b/2", ["a/1", "a/2"], ["a/3", "a/5", "b/1"]]
