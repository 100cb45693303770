"""A multipart Complete's commit (store.multipart.commit_parts) on a real node: its seams cut again, and its refusal
of a part whose block is gone."""

from __future__ import annotations

import io
import random

import pytest

from casstor_ops.errors import CasstorError, NotFoundError
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.block_list import read_all
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import catalog
from casstor_ops.store.engine.multipart import UPLOADS, commit_parts
from casstor_ops.store.engine.upload import source_file_hash

from .support import SESSION_SETTINGS

KiB = 1024


def _parts(cql, upload: str, data: bytes, part_size: int) -> list:
    """``data`` stored as the parts of ``upload``, each a file of its own (as UploadPart stores it); their heads."""
    store, st = Store(cql), Statements.for_session(cql)
    heads = []
    for number, start in enumerate(range(0, len(data), part_size), 1):
        part = f"{UPLOADS}b/{upload}/{number:05d}"
        store.put(io.BytesIO(data[start:start + part_size]), part, lease=False, inline=False)
        heads.append(catalog.head(cql, st, part))
    return heads


def _drop_block(cql, digest: bytes) -> None:
    cql.execute(f"DELETE FROM {DATA_KS}.blocks WHERE hash = %s", (digest,))
    cql.execute(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = %s", (digest,))


def test_a_complete_commits_the_blocks_of_one_store_of_the_object(cql):
    """What it injects: 1.2 MB in parts of 300,000 bytes, three seams. What it checks: the object restores
    byte-exact with the file hash of a store of its bytes, so the blocks its seams' runs cut were written."""
    data = random.Random(11).randbytes(1_200_000)
    head = commit_parts(cql, SESSION_SETTINGS, _parts(cql, "u1", data, 300_000), "b/whole")
    assert head.hash == source_file_hash(io.BytesIO(data), SESSION_SETTINGS)
    out = io.BytesIO()
    Store(cql).restore("b/whole", out)
    assert out.getvalue() == data


@pytest.mark.parametrize("where", ["at a seam", "between seams"])
def test_a_complete_whose_parts_block_is_gone_fails_and_commits_nothing(cql, where):
    """What it injects: one block of the second of three parts deleted (content and index row) before the
    Complete: its first block, which the seam's run reads, or its middle one, which only the existence check sees.
    What it checks: the commit fails with one line naming the block and telling to upload the parts again, and the
    object has no version (before the streaming commit, the check raised the same; the run's read is new)."""
    data = random.Random(12).randbytes(900_000)
    parts = _parts(cql, f"u-{where[0:2]}", data, 300_000)
    st = Statements.for_session(cql)
    rows = list(read_all(cql, st, parts))[1]
    digest = rows[0][1] if where == "at a seam" else rows[len(rows) // 2][1]
    _drop_block(cql, digest)
    object_id = f"b/gone-{where[0:2]}"
    with pytest.raises(CasstorError, match=f"block {digest.hex()} of a part is no longer stored"):
        commit_parts(cql, SESSION_SETTINGS, parts, object_id)
    with pytest.raises(NotFoundError):
        catalog.head(cql, st, object_id)
