"""Restore: damaged or missing blocks fail fast and leave nothing at DEST; DEST is never clobbered."""

import io
import os

import pytest

from casstor_ops.errors import CasstorError, CorruptionError
from casstor_ops.schema import DATA_KS, META_KS
from casstor_ops.store import Store


@pytest.fixture()
def store(cql):
    return Store(cql)


def _stored(store: Store, file_id: str, size: int = 3_000_000) -> bytes:
    data = os.urandom(size)
    store.put(io.BytesIO(data), file_id)
    return data


def _nth_block(cql, file_id: str, n: int):
    head = cql.execute(cql.prepare(f"SELECT version FROM {META_KS}.files WHERE id = ?"), (file_id,)).one()
    rows = list(cql.execute(cql.prepare(
        f"SELECT block_offset, hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"), (file_id, head.version)))
    return rows[n]


def test_deleted_block_fails_fast_and_leaves_nothing(store, cql, tmp_path):
    _stored(store, "damaged/deleted")
    victim = _nth_block(cql, "damaged/deleted", 5)
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (victim.hash,))
    with pytest.raises(CorruptionError) as caught:
        store.restore("damaged/deleted", tmp_path / "out")
    message = str(caught.value)
    assert "damaged/deleted" in message and victim.hash.hex() in message and f"offset {victim.block_offset}" in message
    assert "missing" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []  # no DEST, no temporary file


def test_altered_block_content_is_detected(store, cql, tmp_path):
    _stored(store, "damaged/altered")
    victim = _nth_block(cql, "damaged/altered", 2)
    row = cql.execute(cql.prepare(f"SELECT content FROM {DATA_KS}.blocks WHERE hash = ?"), (victim.hash,)).one()
    flipped = bytes([row.content[0] ^ 1]) + row.content[1:]
    cql.execute(cql.prepare(f"UPDATE {DATA_KS}.blocks SET content = ? WHERE hash = ?"), (flipped, victim.hash))
    with pytest.raises(CorruptionError, match="does not match its hash"):
        store.restore("damaged/altered", tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_existing_destination_is_refused_unless_forced(store, tmp_path):
    data = _stored(store, "dest/existing", 200_000)
    dest = tmp_path / "out"
    dest.write_bytes(b"precious")
    with pytest.raises(CasstorError, match="already exists"):
        store.restore("dest/existing", dest)
    assert dest.read_bytes() == b"precious"
    store.restore("dest/existing", dest, force=True)
    assert dest.read_bytes() == data
    with pytest.raises(CasstorError, match="is a directory"):
        store.restore("dest/existing", tmp_path, force=True)
    with pytest.raises(CasstorError, match="no such directory"):
        store.restore("dest/existing", tmp_path / "nope" / "out")


def test_unwritable_destination_is_one_error(store, tmp_path):
    _stored(store, "dest/unwritable", 1000)
    with pytest.raises(CasstorError, match="cannot write"):
        store.restore("dest/unwritable", "/proc/casstor-test-out")  # /proc refuses new files, even for root


def test_unknown_id(store, tmp_path):
    with pytest.raises(CasstorError, match="no such file"):
        store.restore("never-stored", tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_memory_stays_bounded_by_the_window(store, tmp_path):
    """A small window still restores a many-block file correctly (ordering and look-ahead logic)."""
    data = _stored(store, "window/small", 8_000_000)
    small = Store(store.session, read_window=2)
    out = io.BytesIO()
    result = small.restore("window/small", out)
    assert out.getvalue() == data and result.blocks > 50
