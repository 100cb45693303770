"""Restore: damaged or missing blocks fail fast and leave nothing at DEST; DEST is never clobbered; a file changed
and reclaimed meanwhile is reported as changed, not corrupt."""

import fcntl
import io
import os

import pytest

from casstor_ops.errors import EXIT_CHANGED, CasstorError, CorruptionError, FileChangedError
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.engine.restore import Restore
from casstor_ops.store.trees.destinations import restore_to_path

from .support import flip_block


@pytest.fixture()
def store(cql):
    return Store(cql)


def _stored(store: Store, file_id: str, size: int = 3_000_000) -> bytes:
    data = os.urandom(size)
    store.put(io.BytesIO(data), file_id)
    return data


def _nth_block(cql, file_id: str, n: int):
    head = cql.execute(cql.prepare(f"SELECT version FROM {META_KS}.versions WHERE id = ?"), (file_id,)).one()
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
    flip_block(cql, victim.hash)
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


def test_destination_with_a_250_byte_basename(store, tmp_path):
    """Injects a DEST whose basename is 250 bytes (a temporary name built from it went past the 255-byte limit,
    so the restore failed 'File name too long'); checks a byte-exact restore and no temporary file left."""
    data = _stored(store, "dest/long-name", 300_000)
    dest = tmp_path / ("é" * 100 + "x" * 50)  # 250 bytes in UTF-8
    assert len(os.fsencode(dest.name)) == 250
    store.restore("dest/long-name", dest)
    assert dest.read_bytes() == data
    assert list(tmp_path.iterdir()) == [dest]


@pytest.mark.parametrize("force", [False, True])
def test_the_temporary_file_stays_locked_until_it_is_in_place(store, tmp_path, monkeypatch, force):
    """Injects: at the rename into place (os.link, or os.replace with force), another restore's stray cleanup
    (another host of a shared file system: its pid check says nothing) trying the temporary file's lock. Checks:
    the lock is still held, the recorded mode and mtime are already set, and DEST ends byte-exact with them."""
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(300_000))
    src.chmod(0o640)
    os.utime(src, ns=(1_600_000_000_000_000_000, 1_600_000_000_123_456_789))
    store.put(src, "dest/locked")
    seen = []

    def other_cleanup_then(rename):
        def renaming(tmp, dest, *args, **kwargs):
            with open(tmp, "rb") as other:  # a second open file description: flock conflicts with the writer's
                try:
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    seen.append("lock taken")
                except BlockingIOError:
                    seen.append("locked")
            stat = os.stat(tmp)
            seen.append((stat.st_mode & 0o7777, stat.st_mtime_ns))
            return rename(tmp, dest, *args, **kwargs)
        return renaming

    monkeypatch.setattr(os, "link", other_cleanup_then(os.link))
    monkeypatch.setattr(os, "replace", other_cleanup_then(os.replace))
    dest = tmp_path / "out.bin"
    if force:
        dest.write_bytes(b"old")
    store.restore("dest/locked", dest, force=force)
    monkeypatch.undo()
    assert seen == ["locked", (0o640, 1_600_000_000_123_456_789)]
    assert dest.read_bytes() == src.read_bytes()
    assert dest.stat().st_mode & 0o7777 == 0o640 and dest.stat().st_mtime_ns == 1_600_000_000_123_456_789
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "src.bin"]


def test_unknown_id(store, tmp_path):
    with pytest.raises(CasstorError, match="no such file"):
        store.restore("never-stored", tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_memory_stays_bounded_by_the_window(store, tmp_path):
    """A small window still restores a many-block file correctly (ordering and look-ahead logic)."""
    data = _stored(store, "window/small", 8_000_000)
    small = Store(store.session, read_concurrency=2)
    out = io.BytesIO()
    result = small.restore("window/small", out)
    assert out.getvalue() == data and result.blocks > 50


class _ChangedMidway(Restore):
    """A restore that runs ``meanwhile`` once it has read its block list, before it reads any block."""

    def __init__(self, session, head, meanwhile) -> None:
        super().__init__(session, head)
        self._meanwhile = meanwhile

    def _block_list(self):
        rows = list(super()._block_list())
        self._meanwhile()
        return rows


@pytest.mark.parametrize("change", ["overwrite", "remove"])
def test_a_file_changed_and_reclaimed_during_restore_is_reported_as_changed(store, cql, tmp_path, change):
    """Injects, between reading the block list and reading the blocks, an overwrite (or removal) of the file, the
    deletion of the old version's row (what forget does to a version no policy keeps) and of its blocks (what a
    reclaim then does); checks
    FileChangedError (exit 12, one line, 'the file changed during restore; run again'), not CorruptionError,
    nothing left at DEST, and that running again restores the new version."""
    file_id = f"changing/{change}"
    _stored(store, file_id, 1_000_000)
    old_head = store.stat(file_id)
    old_blocks = {r.hash for r in cql.execute(cql.prepare(
        f"SELECT hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"), (file_id, old_head.version))}
    new = os.urandom(400_000)

    def change_and_reclaim() -> None:
        if change == "overwrite":
            store.put(io.BytesIO(new), file_id)
        else:
            store.remove(file_id)
        cql.execute(cql.prepare(f"DELETE FROM {META_KS}.versions WHERE id = ? AND version = ?"),
                    (file_id, old_head.version))
        for digest in old_blocks:
            cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (digest,))

    with pytest.raises(FileChangedError) as caught:
        restore_to_path(_ChangedMidway(cql, old_head, change_and_reclaim), tmp_path / "out", force=False)
    message = str(caught.value)
    assert not isinstance(caught.value, CorruptionError) and caught.value.exit_code == EXIT_CHANGED == 12
    assert message.startswith(f"{file_id!r}: the file changed during restore") and message.endswith("run again")
    assert "\n" not in message and list(tmp_path.iterdir()) == []
    if change == "overwrite":
        store.restore(file_id, tmp_path / "out")
        assert (tmp_path / "out").read_bytes() == new


def test_a_block_row_without_content_is_missing(store, cql, tmp_path):
    """Injects a block row whose content cell is deleted (size and codec left); checks the restore reports that
    block as missing, a CorruptionError naming it, and leaves no DEST (it used to fail inside the decoder)."""
    _stored(store, "damaged/no-content")
    victim = _nth_block(cql, "damaged/no-content", 1)
    cql.execute(cql.prepare(f"DELETE content FROM {DATA_KS}.blocks WHERE hash = ?"), (victim.hash,))
    with pytest.raises(CorruptionError, match=f"block {victim.hash.hex()} at offset {victim.block_offset} is missing"):
        store.restore("damaged/no-content", tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_kept_older_version_with_a_block_missing_is_corruption(store, cql, tmp_path):
    """Injects the loss of a block that only an older, still kept version names (its row is there: no forget
    dropped it); checks that restoring that version reports corruption (exit 3) naming the block, not 'the file
    changed' (exit 12): reclaim keeps every block a version row names, so nothing but damage removes it."""
    _stored(store, "damaged/older")
    older = store.stat("damaged/older")
    victim = _nth_block(cql, "damaged/older", 1)
    _stored(store, "damaged/older", 500_000)
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (victim.hash,))
    with pytest.raises(CorruptionError, match=f"block {victim.hash.hex()} at offset {victim.block_offset}") as caught:
        store.restore("damaged/older", tmp_path / "out", head=store.stat("damaged/older", version=older.version))
    assert caught.value.exit_code == 3 and list(tmp_path.iterdir()) == []
