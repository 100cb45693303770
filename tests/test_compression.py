"""Compressed blocks on the real node: raw, compressed and mixed blocks round-trip; a store switched from none to
zstd; a damaged or bomb-like compressed block fails the restore with exit 3 and no DEST; a schema-2 store upgrades
and keeps storing raw."""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Iterator

import pytest
import zstandard

from casstor_ops.errors import EXIT_CORRUPT, EXIT_NOT_INITIALISED, CasstorError, CorruptionError
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.codec import DEFAULT_COMPRESSION
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.schema import SCHEMA_VERSION, init_store, require_settings, set_compression

from .support import restored, run_casstor


def _text(seed: int, size: int) -> bytes:
    """Source-like bytes: lines drawn from a small vocabulary (zstd shrinks them several times)."""
    rng = random.Random(seed)
    words = [b"def", b"return", b"self", b"import", b"casstor", b"block", b"(", b")", b":", b"    ", b"value"]
    out = bytearray()
    while len(out) < size:
        out += b" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + b"\n"
    return bytes(out[:size])


def _codecs(cql, store: Store, file_id: str) -> list[str | None]:
    """The codec of each block of ``file_id``'s committed version, in file order."""
    head = store.stat(file_id)
    hashes = [r.hash for r in cql.execute(Statements.for_session(cql).file_blocks, (file_id, head.version))]
    read = cql.prepare(f"SELECT codec FROM {DATA_KS}.blocks WHERE hash = ?")
    return [cql.execute(read, (h,)).one().codec for h in hashes]


@contextlib.contextmanager
def _compression(cql, spec: str) -> Iterator[None]:
    """The test store with ``spec`` for new blocks; the default again afterwards (other tests share the store)."""
    set_compression(cql, spec)
    try:
        yield
    finally:
        set_compression(cql, DEFAULT_COMPRESSION)


def test_compressed_and_raw_blocks_round_trip_and_count_as_stored(empty_store) -> None:
    """Stores source-like text and random bytes with the default compression; checks the text's blocks are zstd and
    the random ones raw, both restore byte-exact, and stats count unique and stored bytes apart."""
    store, text, noise = Store(empty_store), _text(1, 3_000_000), random.Random(2).randbytes(1_000_000)
    results = [store.put(io.BytesIO(text), "c/text"), store.put(io.BytesIO(noise), "c/noise")]
    assert set(_codecs(empty_store, store, "c/text")) == {"zstd"}
    assert set(_codecs(empty_store, store, "c/noise")) == {None}
    assert restored(store, "c/text") == text and restored(store, "c/noise") == noise
    totals = store.stats()
    assert totals.unique_bytes == len(text) + len(noise) == sum(r.new_bytes for r in results)
    assert totals.stored_bytes == sum(r.new_stored_bytes for r in results)
    assert results[0].new_stored_bytes * 2 < len(text) and results[1].new_stored_bytes == len(noise)
    assert totals.compression_ratio > 1.5


def test_a_store_switched_from_none_to_zstd_mixes_blocks(cql) -> None:
    """Stores a text with compression none, then switches to zstd:3 and stores a second version that shares its
    first half; checks the old blocks stay raw (none rewritten), the new ones are zstd, and both versions and a
    third file that reuses both kinds restore byte-exact."""
    store, first = Store(cql), _text(3, 2_000_000)
    second = first[:1_000_000] + _text(4, 1_000_000)
    with _compression(cql, "none"):
        assert Store(cql).settings.compression == "none"
        Store(cql).put(io.BytesIO(first), "mixed/v1")
    assert set(_codecs(cql, store, "mixed/v1")) == {None}
    switched = Store(cql)
    assert switched.settings.compression == DEFAULT_COMPRESSION
    switched.put(io.BytesIO(second), "mixed/v2")
    codecs = _codecs(cql, store, "mixed/v2")
    assert None in codecs and "zstd" in codecs and codecs.index("zstd") > 0
    both = first + second
    switched.put(io.BytesIO(both), "mixed/both")
    assert restored(store, "mixed/v1") == first and restored(store, "mixed/v2") == second
    assert restored(store, "mixed/both") == both


@pytest.mark.parametrize("payload", [
    pytest.param(lambda good: good[:len(good) // 2], id="truncated-frame"),
    pytest.param(lambda good: good[:-40] + bytes(b ^ 0x55 for b in good[-40:]), id="flipped-bytes"),
    pytest.param(lambda good: zstandard.ZstdCompressor().compress(bytes(256 << 20)), id="bomb-256MiB"),
])
def test_a_damaged_compressed_block_fails_the_restore_with_exit_3_and_no_dest(cql, tmp_path, payload) -> None:
    """Injects a damaged zstd block into a stored file: cut in half, its last 40 bytes flipped, or replaced by a
    ~8 KiB frame of 256 MiB of zeros (a decompression bomb; tests/unit/test_codec.py checks that decoding one
    allocates under 1 MiB); checks `casstor restore` exits 3 with one line naming the block and leaves no DEST nor
    temporary file, and the library raises CorruptionError."""
    store, text = Store(cql), _text(5, 1_500_000)
    file_id = f"damaged/{tmp_path.name}"
    store.put(io.BytesIO(text), file_id)
    head = store.stat(file_id)
    victim = list(cql.execute(Statements.for_session(cql).file_blocks, (file_id, head.version)))[1]
    good = cql.execute(cql.prepare(f"SELECT content FROM {DATA_KS}.blocks WHERE hash = ?"), (victim.hash,)).one()
    cql.execute(cql.prepare(f"UPDATE {DATA_KS}.blocks SET content = ? WHERE hash = ?"),
                (payload(good.content), victim.hash))
    dest = tmp_path / "out" / "restored"
    dest.parent.mkdir()
    proc = run_casstor("restore", file_id, str(dest))
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == EXIT_CORRUPT and len(lines) == 1, proc.stderr
    assert victim.hash.hex() in lines[0] and f"offset {victim.block_offset}" in lines[0]
    assert list(dest.parent.iterdir()) == []
    with pytest.raises(CorruptionError):
        store.restore(file_id, io.BytesIO())


def test_a_schema_2_store_is_upgraded_by_init_and_keeps_storing_raw(cql) -> None:
    """Injects the settings of a store made before compression (schema_version 2, no compression row); checks a
    store refuses it with "run 'casstor init'" (exit 9), init upgrades it to the current schema without turning
    compression on, and `casstor init --compression zstd:3` switches it."""
    st = Statements.for_session(cql)
    delete = cql.prepare(f"DELETE FROM {META_KS}.settings WHERE name = ?")
    try:
        cql.execute(st.write_setting, ("schema_version", "2"))
        cql.execute(delete, ("compression",))
        with pytest.raises(CasstorError, match="has schema 2: run 'casstor init' to upgrade") as refused:
            Store(cql)
        assert refused.value.exit_code == EXIT_NOT_INITIALISED
        upgraded = init_store(cql)
        assert (upgraded.schema_version, upgraded.compression) == (SCHEMA_VERSION, "none")
        text = _text(6, 500_000)
        Store(cql).put(io.BytesIO(text), "upgraded/raw")
        assert set(_codecs(cql, Store(cql), "upgraded/raw")) == {None}
        proc = run_casstor("init", "--compression", "zstd:3")
        assert proc.returncode == 0 and b"new blocks compressed zstd:3" in proc.stdout, proc.stderr
        assert require_settings(cql).compression == "zstd:3"
        assert restored(Store(cql), "upgraded/raw") == text
    finally:
        set_compression(cql, DEFAULT_COMPRESSION)


def test_a_bad_compression_is_refused_before_connecting() -> None:
    proc = run_casstor("init", "--compression", "zstd:99", env={"CASSTOR_NODES": "192.0.2.1"})
    assert proc.returncode == 1 and proc.stderr.decode().strip() == (
        "casstor: compression 'zstd:99': expected 'none' or 'zstd:LEVEL' with LEVEL 1-19")


def _node_compression(session) -> dict:
    return dict(session.execute("SELECT compression FROM system_schema.tables WHERE keyspace_name = %s AND "
                                "table_name = 'blocks'", (DATA_KS,)).one().compression)


def test_the_blocks_table_compresses_only_what_the_store_does_not(cql) -> None:
    """A store that compresses its blocks (the test store: zstd:3) has the blocks table's NoopCompressor (chunk
    checksums, no compression); switching to none turns the node's LZ4 on for the raw blocks to come, and back
    to zstd turns it off again."""
    assert _node_compression(cql)["class"].endswith("NoopCompressor")
    with _compression(cql, "none"):
        assert _node_compression(cql)["class"].endswith("LZ4Compressor")
    assert _node_compression(cql)["class"].endswith("NoopCompressor")
