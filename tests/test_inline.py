"""Inline files on the real node: a small file kept in its head row, stored in one write, read in one.

Each test uses the ``inline_store`` fixture (files of 1 B to ``INLINE_MAX`` kept inline). Faults are injected
in the head row (a flipped byte of the content, an overwrite between a listing and a restore) and the test
checks the error that applies.
"""

from __future__ import annotations

import io
import json
import os
import threading

import pytest

from casstor_ops.errors import EXIT_NOT_INITIALISED, CasstorError, CorruptionError, FileChangedError
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.upload import source_file_hash
from casstor_ops.store.schema import SCHEMA_VERSION, init_store, require_settings

from .support import INLINE_MAX, flip_inline, restored, run_casstor, write_tree


def _count(cql, cql_text: str, *params) -> int:
    return len(list(cql.execute(cql.prepare(cql_text), params)))


@pytest.mark.parametrize("content", [b"x", os.urandom(1000), b"text " * 3000, os.urandom(INLINE_MAX)],
                         ids=["1-byte", "random", "compressible", "inline-max"])
def test_a_small_file_is_kept_in_its_head_andrestored(inline_store, tmp_path, content: bytes) -> None:
    """Checks the head has no blocks and no block list, names no stored block, records the file hash a block
    would give (so ETags agree), keeps compressible content compressed, and restores byte-exact to a path and
    a stream."""
    store = Store(inline_store)
    result = store.put(io.BytesIO(content), "inline/a")
    head = store.stat("inline/a")
    assert head.is_inline and (head.blocks, head.size) == (0, len(content))
    assert head.hash == result.hash == source_file_hash(io.BytesIO(content), store.settings)
    assert (result.blocks, result.new_blocks, result.new_bytes) == (0, 0, len(content))
    assert _count(inline_store, f"SELECT hash FROM {DATA_KS}.existing_blocks") == 0
    assert _count(inline_store, f"SELECT hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?",
                  "inline/a", head.version) == 0
    if content.startswith(b"text"):
        assert head.inline.codec == "zstd" and result.new_stored_bytes < len(content) // 10
    assert restored(store, "inline/a") == content
    store.restore("inline/a", tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == content


def test_larger_and_empty_files_stay_in_blocks(inline_store) -> None:
    """Checks the bounds: INLINE_MAX + 1 bytes go to blocks, an empty file is no inline file (size 0)."""
    store = Store(inline_store)
    big = os.urandom(INLINE_MAX + 1)
    store.put(io.BytesIO(big), "inline/big")
    store.put(io.BytesIO(b""), "inline/empty")
    assert store.stat("inline/big").blocks >= 1 and not store.stat("inline/big").is_inline
    assert not store.stat("inline/empty").is_inline
    assert restored(store, "inline/big") == big and restored(store, "inline/empty") == b""


def test_overwrites_between_inline_and_blocks_clear_the_old_content(inline_store) -> None:
    """Checks an inline version overwritten by one in blocks leaves no content in the head (null, not the old
    bytes), and back again; each restores as written."""
    store = Store(inline_store)
    small, big = os.urandom(500), os.urandom(3 * INLINE_MAX)
    store.put(io.BytesIO(small), "inline/flip")
    store.put(io.BytesIO(big), "inline/flip")
    head = store.stat("inline/flip")
    assert head.inline is None and not head.is_inline and restored(store, "inline/flip") == big
    row = inline_store.execute(Statements.for_session(inline_store).inline_content, ("inline/flip", head.version)).one()
    assert row.content is None
    store.put(io.BytesIO(small), "inline/flip")
    assert store.stat("inline/flip").is_inline and restored(store, "inline/flip") == small


def test_the_same_body_under_two_ids_is_kept_twice(inline_store) -> None:
    """The trade inline files make (docs/schema.md): no dedup. Checks each store reports its bytes as new and
    the store's totals count them twice."""
    store = Store(inline_store)
    body = os.urandom(4000)
    assert store.put(io.BytesIO(body), "inline/one").new_bytes == 4000
    assert store.put(io.BytesIO(body), "inline/two").new_bytes == 4000
    stats = store.stats()
    assert (stats.files, stats.logical_bytes, stats.unique_blocks, stats.unique_bytes, stats.stored_bytes) == (
        2, 8000, 0, 8000, 8000)


def test_damaged_inline_content_is_corruption_never_served(inline_store, tmp_path) -> None:
    """Injects a flipped bit in the head row's content; checks a restore raises CorruptionError and leaves
    nothing at the path, and the small-file read answers None (the server then reads it the careful way)."""
    store = Store(inline_store)
    store.put(io.BytesIO(os.urandom(3000)), "inline/bad")
    flip_inline(inline_store, "inline/bad")
    with pytest.raises(CorruptionError, match="does not match its file hash"):
        store.restore("inline/bad", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    answered, answers = threading.Event(), []
    store.callbacks.read_small_async(store.stat("inline/bad"), lambda content: (answers.append(content), answered.set()))
    assert answered.wait(10) and answers == [None]
    with pytest.raises(CorruptionError):
        store.read(store.stat("inline/bad"), io.BytesIO())


def test_a_listed_head_reads_its_content_and_sees_a_change(inline_store) -> None:
    """A head from a listing carries no content. Checks a restore from it reads the content; injecting an
    overwrite between the listing and the restore, that it still reads the listed version's bytes (its row is
    kept until forget), never the new bytes under the old head's hash; and, injecting that version's row
    deleted (what forget does), that the restore says the file changed (exit 12)."""
    store = Store(inline_store)
    store.put(io.BytesIO(b"first"), "inline/listed")
    listed = next(iter(store.list("inline/")))
    assert listed.is_inline and listed.inline is None
    assert store.read(listed, io.BytesIO()).bytes == 5
    store.put(io.BytesIO(b"second"), "inline/listed")
    out = io.BytesIO()
    store.read(listed, out)
    assert out.getvalue() == b"first"
    inline_store.execute(inline_store.prepare(f"DELETE FROM {META_KS}.versions WHERE id = ? AND version = ?"),
                         (listed.id, listed.version))
    with pytest.raises(FileChangedError):
        store.read(listed, io.BytesIO())


def test_the_small_file_read_answers_from_the_head(inline_store) -> None:
    """Checks the server's fast read of an inline file needs no request beyond the head's."""
    store = Store(inline_store)
    store.put(io.BytesIO(b"hello inline"), "inline/fast")
    answers: list = []
    store.callbacks.read_small_async(store.stat("inline/fast"), answers.append)
    assert answers == [b"hello inline"]  # answered at once, on this thread


def test_a_tree_with_inline_files_is_stored_skipped_andrestored(inline_store, tmp_path) -> None:
    """Stores a tree of inline and block files with `casstor store DIR PREFIX`; checks which are inline, that a
    re-run skips every file (an inline file's hash is its block's), and that `casstor restore PREFIX/ DIR`
    gives every byte and the recorded mode back."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    files = {"small.txt": b"tiny\n", "sub/ünï.bin": os.urandom(INLINE_MAX), "sub/big.bin": os.urandom(100_000),
             "empty": b""}
    write_tree(src, files)
    os.chmod(src / "small.txt", 0o640)
    assert run_casstor("store", str(src), "tree", "--quiet").returncode == 0
    store = Store(inline_store)
    assert {f.id for f in store.list("tree/") if f.is_inline} == {"tree/small.txt", "tree/sub/ünï.bin"}
    again = run_casstor("store", str(src), "tree", "--json")
    assert {r["status"] for r in json.loads(again.stdout)["files"]} == {"skipped"}
    proc = run_casstor("restore", "tree/", str(dest))
    assert proc.returncode == 0, proc.stderr
    for name, data in files.items():
        assert (dest / name).read_bytes() == data, name
    assert (dest / "small.txt").stat().st_mode & 0o777 == 0o640


def test_a_schema_3_store_is_upgraded_by_init_without_inline_files(cql) -> None:
    """Injects the settings of a store made before inline files (schema_version 3, no inline_max row); checks a
    store refuses it with "run 'casstor init'" (exit 9), and init upgrades it with no inline files."""
    st = Statements.for_session(cql)
    try:
        cql.execute(st.write_setting, ("schema_version", "3"))
        cql.execute(cql.prepare(f"DELETE FROM {META_KS}.settings WHERE name = ?"), ("inline_max",))
        with pytest.raises(CasstorError, match="has schema 3: run 'casstor init' to upgrade") as refused:
            Store(cql)
        assert refused.value.exit_code == EXIT_NOT_INITIALISED
        upgraded = init_store(cql)
        assert (upgraded.schema_version, upgraded.inline_max) == (SCHEMA_VERSION, 0)
    finally:
        init_store(cql)
    assert require_settings(cql).inline_max == 0


def test_an_inline_max_above_the_chunk_minimum_is_refused_before_connecting() -> None:
    proc = run_casstor("init", "--inline-max", str(1 << 30), env={"CASSTOR_NODES": "192.0.2.1"})
    assert proc.returncode != 0 and b"Traceback" not in proc.stderr
    assert proc.stderr.decode().strip().count("\n") == 0 and "inline max" in proc.stderr.decode()
