"""Store.put / restore round trips on the real node: byte-exact, deduplicated, atomic."""

import io
import os
import socket
import threading

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.blocks import block_uploads, claims
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.engine.upload import source_file_hash

from .support import SESSION_SETTINGS

S = SESSION_SETTINGS  # the session store's chunk sizes


@pytest.fixture()
def store(cql):
    return Store(cql)


def _round_trip(store: Store, tmp_path, data: bytes, file_id: str):
    src = tmp_path / "src"
    src.write_bytes(data)
    result = store.put(src, file_id)
    dest = tmp_path / "dest"
    dest.unlink(missing_ok=True)
    restored = store.restore(file_id, dest)
    assert dest.read_bytes() == data
    assert (result.bytes, restored.bytes, restored.blocks) == (len(data), len(data), result.blocks)
    return result


def _self_contained_chunk() -> bytes:
    """A small chunk C that FastCDC cuts identically when C is repeated.

    A cut point also depends on the byte just after the chunk, and never on
    the first chunk_min bytes; so C's first byte is set to the byte that
    followed it.
    """
    data = os.urandom(8_000_000)
    cut = list(chunks(io.BytesIO(data), S))[:-1]
    offsets = [0]
    for c in cut:
        offsets.append(offsets[-1] + len(c))
    start, chunk = min(zip(offsets, cut), key=lambda item: len(item[1]))
    candidate = data[start + len(chunk):start + len(chunk) + 1] + bytes(chunk[1:])
    assert [bytes(c) for c in chunks(io.BytesIO(candidate * 3), S)] == [candidate] * 3
    return candidate


@pytest.mark.parametrize("size", [0, 1, S.chunk_min, S.chunk_avg, S.chunk_max, S.chunk_max + 1])
def test_round_trip_sizes(store, tmp_path, size):
    data = os.urandom(size)
    result = _round_trip(store, tmp_path, data, f"sizes/{size}")
    assert result.blocks == len(list(chunks(io.BytesIO(data), S)))
    info = store.stat(f"sizes/{size}")
    assert (info.size, info.blocks, info.hash) == (size, result.blocks, source_file_hash(io.BytesIO(data), S))


def test_round_trip_zeros_is_one_block_repeated(store, tmp_path):
    data = bytes(5 * S.chunk_max + 1000)
    result = _round_trip(store, tmp_path, data, "zeros")
    assert result.blocks == 6
    assert result.new_blocks <= 2  # one 256 KiB block of zeros, written once, plus the tail


def test_round_trip_large_multi_chunk_file(store, tmp_path):
    data = os.urandom(24_000_000)
    result = _round_trip(store, tmp_path, data, "large")
    assert result.blocks > 300 and result.new_bytes == len(data)
    again = store.put(io.BytesIO(data), "large-copy")
    assert (again.new_blocks, again.new_bytes, again.blocks) == (0, 0, result.blocks)


def test_same_block_thousands_of_times(store, tmp_path):
    block = _self_contained_chunk()
    result = _round_trip(store, tmp_path, block * 2000, "repeated")
    assert (result.blocks, result.new_blocks) == (2000, 1)


@pytest.mark.parametrize("file_id", ["it's \"quoted\"", "with spaces  here", "a/b/..c/.d/e..", "naïve/日本語/ü",
                                     "'; DROP TABLE files; --"])
def test_awkward_ids(store, tmp_path, file_id):
    _round_trip(store, tmp_path, os.urandom(70_000), file_id)
    assert file_id in [f.id for f in store.list(file_id[:3])]


def test_empty_id_is_refused(store, tmp_path):
    with pytest.raises(CasstorError, match="non-empty"):
        store.put(io.BytesIO(b"x"), "")


def test_ambiguous_id_is_refused_before_anything_is_written(store):
    """Injects put() with 'dup//x' beside a stored 'dup/x' (both restored to dup/x); checks the refusal names
    the ID and that nothing was stored under it."""
    store.put(io.BytesIO(b"x"), "dup/x")
    with pytest.raises(CasstorError, match=r"file ID 'dup//x': empty, '\.' and '\.\.' path segments are refused"):
        store.put(io.BytesIO(b"y"), "dup//x")
    assert [f.id for f in store.list("dup/")] == ["dup/x"]


def test_concurrent_stores_sharing_blocks_write_each_block_once(store, empty_store, tmp_path):
    shared = os.urandom(6_000_000)
    files = {f"concurrent/{i}": shared + os.urandom(2_000_000) + shared[:3_000_000] for i in range(3)}
    errors, results = [], []
    start = threading.Barrier(len(files))  # all three find the shared blocks missing at once

    def put(file_id, data):
        try:
            start.wait()
            results.append(Store(empty_store).put(io.BytesIO(data), file_id))
        except Exception as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=put, args=item) for item in files.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for file_id, data in files.items():
        out = io.BytesIO()
        store.restore(file_id, out)
        assert out.getvalue() == data
    unique = {block_hash(c) for data in files.values() for c in chunks(io.BytesIO(data), S)}
    totals = store.stats()
    assert totals.unique_blocks == len(unique)
    assert totals.logical_bytes == sum(len(d) for d in files.values())
    assert sum(r.new_blocks for r in results) == len(unique)  # each block uploaded by one store only
    assert sum(r.new_bytes for r in results) == totals.unique_bytes
    assert sum(r.new_stored_bytes for r in results) == totals.stored_bytes


def test_overwrite_replaces_atomically(store, tmp_path):
    old, new = os.urandom(3_000_000), os.urandom(2_000_000)
    store.put(io.BytesIO(old), "overwritten")
    first = store.stat("overwritten")
    store.put(io.BytesIO(new), "overwritten")
    second = store.stat("overwritten")
    assert second.version != first.version and second.hash == source_file_hash(io.BytesIO(new), S)
    out = io.BytesIO()
    store.restore("overwritten", out)
    assert out.getvalue() == new


def test_overwrite_while_restoring(store, tmp_path):
    old, new = os.urandom(12_000_000), os.urandom(12_000_000)
    store.put(io.BytesIO(old), "busy")
    overwritten = threading.Event()

    def progress(_n):
        if not overwritten.is_set():  # overwrite once, after the restore has started reading
            store.put(io.BytesIO(new), "busy")
            overwritten.set()

    dest = tmp_path / "busy"
    store.restore("busy", dest, progress=progress)
    assert overwritten.is_set()
    assert dest.read_bytes() == old  # the version it started with, whole
    store.restore("busy", dest, force=True)
    assert dest.read_bytes() == new


def test_remove(store):
    store.put(io.BytesIO(b"bye"), "to-remove")
    assert store.remove("to-remove").size == 3
    with pytest.raises(CasstorError, match="no such file"):
        store.stat("to-remove")
    with pytest.raises(CasstorError, match="no such file"):
        store.remove("to-remove")


def test_bad_sources(store, tmp_path):
    with pytest.raises(CasstorError, match="No such file"):
        store.put(tmp_path / "missing", "x")
    with pytest.raises(CasstorError, match="is a directory"):
        store.put(tmp_path, "x")
    with pytest.raises(CasstorError, match="Input/output error"):
        store.put("/proc/self/mem", "x")  # opens, then every read fails (root can read any mode bits)


@pytest.mark.parametrize("pause_in", ["check", "claim"])
def test_a_second_writer_starting_mid_store_shares_new_blocks_exactly(store, empty_store, pause_in):
    """Injects a second store of the same 200 new blocks that starts while the first is paused after its
    existence check found them missing ("check": before it claims them; resumed once the second finished) or
    after it claimed them ("claim": before it uploads them; resumed once the second waits for its claims);
    checks that between them each block is uploaded once (new_blocks sum to the distinct blocks) and both
    files restore."""
    shared = os.urandom(200 * S.chunk_avg)
    files = {"mid/first": shared + os.urandom(1_000_000), "mid/second": os.urandom(1_000_000) + shared}
    paused, second_waits, resume = threading.Event(), threading.Event(), threading.Event()
    results, errors = {}, []
    target, method = (claims.Claims, "claim") if pause_in == "check" else (block_uploads.BlockUploads, "upload")
    real_pause_point, real_await = getattr(target, method), claims.Claims.check_awaited

    def pausing(self, *args):
        if threading.current_thread().name == "mid/first" and not paused.is_set():
            paused.set()
            assert resume.wait(60)
        return real_pause_point(self, *args)

    def awaiting(self):
        if threading.current_thread().name == "mid/second":
            second_waits.set()
        return real_await(self)

    def put(file_id):
        try:
            results[file_id] = Store(empty_store).put(io.BytesIO(files[file_id]), file_id)
        except Exception as err:  # reported below
            errors.append(err)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(target, method, pausing)
        patch.setattr(claims.Claims, "check_awaited", awaiting)
        first, second = (threading.Thread(target=put, args=(name,), name=name) for name in files)
        first.start()
        assert paused.wait(60)
        second.start()
        if pause_in == "check":
            second.join()
        else:
            assert second_waits.wait(60)
        resume.set()
        first.join()
        second.join()
    assert not errors
    unique = {block_hash(c) for data in files.values() for c in chunks(io.BytesIO(data), S)}
    assert sum(r.new_blocks for r in results.values()) == len(unique) == store.stats().unique_blocks
    for file_id, data in files.items():
        out = io.BytesIO()
        store.restore(file_id, out)
        assert out.getvalue() == data


def test_connections_send_small_requests_at_once(cql):
    """Every connection of a session disables Nagle's algorithm (TCP_NODELAY): with it on, a request longer than
    one TCP segment (a 4 KiB block) waited for the node's delayed ACK, ~40 ms a request sent alone."""
    connections = [c for pool in cql._pools.values() for c in pool.get_connections()]
    connections.append(cql.cluster.control_connection._connection)
    assert connections and all(c._socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for c in connections)
