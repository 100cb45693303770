"""The store's commit protocol on the real node: re-verification before commit, the commit bound, batch sizes."""

import io
import os
import time
import uuid

import pytest
from cassandra.query import BatchStatement, BatchType

from casstor_ops.store import block_uploads, commit
from casstor_ops.store.claims import CLAIM_TTL_S
from casstor_ops.errors import CasstorError
from casstor_ops.store.keyspaces import DATA_KS, META_KS
from casstor_ops.store.statements import Statements
from casstor_ops.store.api import Store


def test_block_list_batches_stay_under_the_fail_threshold(cql):
    assert commit.batch_fail_threshold(cql) == 50 * 1024  # the node's default, read from system_views
    rows = commit.block_list_batch_rows(cql)
    assert rows == 50 * 1024 * 3 // 4 // commit.FILE_BLOCK_ROW_BYTES
    # Single-partition batches are exempt from the threshold; a two-partition one is not: it must pass.
    batch = BatchStatement(BatchType.UNLOGGED)
    version = uuid.uuid1()
    for i in range(rows):
        row = (f"batch-probe/{i % 2}", version, i, os.urandom(32), 1)
        batch.add(Statements.for_session(cql).insert_file_block, row)
    cql.execute(batch)


def test_blocks_verified_too_long_ago_are_rechecked_and_reuploaded(cql, monkeypatch, tmp_path):
    store = Store(cql)
    data = os.urandom(2_000_000)
    store.put(io.BytesIO(data), "recheck/first")
    victims = [r.hash for r in cql.execute(cql.prepare(
        f"SELECT hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"),
        ("recheck/first", store.stat("recheck/first").version))][:2]

    def bound_after_reclaim(session):
        # What online reclaim could do while a slow store runs: delete blocks the store saw earlier.
        for digest in victims:
            cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = ?"), (digest,))
            cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (digest,))
        time.sleep(1.2)  # every verification is now older than half the bound
        return 2

    monkeypatch.setattr(commit, "commit_bound_s", bound_after_reclaim)
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
    same content does not wait for it to expire (CLAIM_TTL_S)."""
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
    assert result.new_blocks == result.blocks and result.seconds < CLAIM_TTL_S / 2
