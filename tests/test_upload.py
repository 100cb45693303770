"""The store's commit protocol on the real node: re-verification before commit, the commit bound, batch sizes."""

import io
import os
import time
from dataclasses import replace
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement, BatchType

from casstor_ops.store.blocks import block_uploads

from casstor_ops.store.cql import request_queue

from casstor_ops.errors import CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import commit


def test_a_block_list_batch_is_one_partition_exempt_from_the_batch_thresholds(cql):
    """A full batch of one block list (one partition) is accepted without a size warning although it is far above
    the node's batch_size_warn_threshold (5 KiB): the store need not read the threshold."""
    version = uuid.uuid1()
    batch = BatchStatement(BatchType.UNLOGGED)
    for i in range(commit.BLOCK_LIST_BATCH_ROWS):
        batch.add(Statements.for_session(cql).insert_file_block, ("batch-probe/one", version, i, os.urandom(32), 1))
    assert cql.execute(batch).response_future.warnings is None


def test_blocks_verified_too_long_ago_are_rechecked_and_reuploaded(cql, monkeypatch, tmp_path):
    store = Store(cql)
    data = os.urandom(2_000_000)
    store.put(io.BytesIO(data), "recheck/first")
    victims = [r.hash for r in cql.execute(cql.prepare(
        f"SELECT hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"),
        ("recheck/first", store.stat("recheck/first").version))][:2]

    struck = []

    def bound_after_reclaim(session):
        # What online reclaim could do while a slow store runs: delete blocks the store saw earlier (once: a
        # commit retried on a loaded machine reads the bound again).
        if not struck:
            struck.append(True)
            for digest in victims:
                cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = ?"), (digest,))
                cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (digest,))
            time.sleep(1.2)  # every verification is now older than half the bound
        return 2

    monkeypatch.setattr(commit, "commit_bound_s", bound_after_reclaim)
    # No fast path: the bound is read, and reclaim strikes.
    monkeypatch.setattr(commit, "SAFETY", replace(SAFETY, min_commit_bound_s=0))
    (tmp_path / "src").write_bytes(data)
    result = store.put(tmp_path / "src", "recheck/second")
    assert result.new_blocks == 2  # the re-uploaded ones
    out = io.BytesIO()
    store.restore("recheck/first", out)
    assert out.getvalue() == data


def test_a_commit_past_the_bound_aborts_and_keeps_the_old_version(cql, monkeypatch):
    store = Store(cql)
    old = os.urandom(300_000)
    store.put(io.BytesIO(old), "bound/slow")
    real = commit.Commit._write_block_list

    def slow_block_list(self, file_id, version):
        real(self, file_id, version)
        time.sleep(1.1)

    monkeypatch.setattr(commit, "commit_bound_s", lambda session: 1)
    monkeypatch.setattr(commit.Commit, "_write_block_list", slow_block_list)
    with pytest.raises(CasstorError, match="commit bound"):
        store.put(io.BytesIO(os.urandom(300_000)), "bound/slow")
    out = io.BytesIO()
    store.restore("bound/slow", out)
    assert out.getvalue() == old


def test_no_block_is_written_twice_by_one_store(empty_store):
    store = Store(empty_store, max_requests=4)
    block = bytes(range(256)) * 1024  # 256 KiB: a max-size chunk, repeated
    result = store.put(io.BytesIO(block * 40 + os.urandom(500_000)), "twice/one")
    assert result.new_blocks == result.blocks - 39
    assert store.stats().unique_blocks == result.new_blocks


def test_a_failing_store_gives_up_its_claims(empty_store, monkeypatch):
    """A store interrupted between an upload and its index row releases the claim, so the next store of the
    same content does not wait for it to expire (SAFETY.claim_ttl_s)."""
    data = os.urandom(3_000_000)

    def interrupted(self, *written):
        raise KeyboardInterrupt  # Ctrl-C right after a block's content was written

    monkeypatch.setattr(block_uploads.BlockUploads, "_written", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Store(empty_store).put(io.BytesIO(data), "claims/interrupted")
    monkeypatch.undo()
    claims = [r.hash for r in empty_store.execute(f"SELECT hash FROM {DATA_KS}.block_claims")]
    indexed = {r.hash for r in empty_store.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")}
    assert not [h for h in claims if h not in indexed]  # no claim left for a block nobody will index

    result = Store(empty_store).put(io.BytesIO(data), "claims/again")
    assert result.new_blocks == result.blocks - len(indexed) and result.seconds < SAFETY.claim_ttl_s / 2


def test_a_small_store_commits_without_reading_the_bound(cql, monkeypatch):
    """A store whose checks are all younger than half the least bound commits under that bound, which is only
    stricter, without reading the store's (one request fewer for a small file)."""
    reads = []
    monkeypatch.setattr(commit, "commit_bound_s", lambda session: reads.append(session) or 300)
    Store(cql).put(io.BytesIO(os.urandom(20_000)), "bound/small")
    assert reads == []


def test_a_commit_slower_than_the_least_bound_retries_under_the_stores_own(cql, monkeypatch):
    """Injects a block-list write that takes longer than the least bound (SAFETY.min_commit_bound_s) on the first
    attempt of a small store; checks the commit reads the store's own bound (300 s) and commits the new version
    on its second attempt, instead of giving up after attempts held to the least bound."""
    reads, real = [], commit.Commit._write_block_list

    def slow_once(self, file_id, version):
        real(self, file_id, version)
        if not reads:
            time.sleep(commit.SAFETY.min_commit_bound_s + 0.1)

    monkeypatch.setattr(commit, "commit_bound_s", lambda session: reads.append(session) or 300)
    monkeypatch.setattr(commit.Commit, "_write_block_list", slow_once)
    data = os.urandom(20_000)
    Store(cql).put(io.BytesIO(data), "bound/slow-once")
    assert len(reads) == 1
    out = io.BytesIO()
    Store(cql).restore("bound/slow-once", out)
    assert out.getvalue() == data


def test_a_refused_content_write_leaves_no_index_row(empty_store, monkeypatch):
    """Injects a refusal (InvalidRequest, as from a node) of every request that carries a block's content; checks
    the store fails and that no index row names a block whose content is not stored (an index row is sent only
    once its content's write is acknowledged)."""
    block_insert = Statements.for_session(empty_store).insert_block
    real_send = request_queue.RequestQueue._send

    def refuse_content(self, request):
        statement = request.statement  # a prepared statement with its parameters, or a batch of them
        query_ids = ([entry[1] for entry in statement._statements_and_parameters]
                     if isinstance(statement, BatchStatement) else [getattr(statement, "query_id", None)])
        if block_insert.query_id in query_ids:
            self.in_flight += 1
            self._done.put((request, None, InvalidRequest("injected: content write refused")))
        else:
            real_send(self, request)

    monkeypatch.setattr(request_queue.RequestQueue, "_send", refuse_content)
    with pytest.raises(InvalidRequest, match="injected"):
        Store(empty_store).put(io.BytesIO(os.urandom(2_000_000)), "refused/content")
    monkeypatch.undo()
    indexed = [r.hash for r in empty_store.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")]
    stored = {r.hash for r in empty_store.execute(f"SELECT hash FROM {DATA_KS}.blocks")}
    assert [h for h in indexed if h not in stored] == []


def _claimed(cql) -> set[bytes]:
    return {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.block_claims")}


def test_a_lone_small_block_is_uploaded_without_a_claim(empty_store):
    """A file of one block no larger than the chunker's minimum skips the claim (its Paxos round); a file of
    several blocks still claims them (their claims live SAFETY.claim_ttl_s after the store, so they can be seen)."""
    store = Store(empty_store)
    small = os.urandom(store.settings.chunk_min)
    result = store.put(io.BytesIO(small), "lone/small")
    assert (result.blocks, result.new_blocks, result.new_bytes) == (1, 1, len(small))
    assert _claimed(empty_store) == set()
    assert store.put(io.BytesIO(small), "lone/again").new_blocks == 0  # still checked: stored once
    out = io.BytesIO()
    store.restore("lone/again", out)
    assert out.getvalue() == small

    large = store.put(io.BytesIO(os.urandom(8 * store.settings.chunk_max)), "lone/not")
    assert large.blocks > 1 and len(_claimed(empty_store)) == large.new_blocks


def test_concurrent_stores_of_one_small_content_all_commit_and_store_it_once(empty_store):
    """Unclaimed, concurrent stores of the same lone block may each upload it: each commits, each restores the
    content, and the store keeps one block."""
    store = Store(empty_store)
    small = os.urandom(4096)
    keys = [f"lone/{i}" for i in range(8)]
    with ThreadPoolExecutor(len(keys)) as pool:
        results = list(pool.map(lambda key: store.put(io.BytesIO(small), key), keys))
    assert all(r.blocks == 1 for r in results) and sum(r.new_blocks for r in results) >= 1
    for key in keys:
        out = io.BytesIO()
        store.restore(key, out)
        assert out.getvalue() == small
    assert store.stats().unique_blocks == 1
