"""Small files stored in batches on the real node (`casstor_ops.store.engine.batch_upload`): a tree, the API, a bad file."""

from __future__ import annotations

import io
import json
import os
import random
from pathlib import Path

from bench.common import ClientRequests
from casstor_ops.store.api import SmallFile, Store
from casstor_ops.store.bulk.tree import _row
from casstor_ops.store.bulk.tree_files import STORED, VANISHED, ListedHeads, store_small_files
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.engine.upload import source_file_hash
from casstor_ops.store.namespace.entries import BatchedEntries
from casstor_ops.store.trees.source_listing import list_source

from .support import SESSION_SETTINGS, run_casstor, write_tree

FILES = 300


def _small_tree(root: Path) -> dict[str, bytes]:
    """``FILES`` small files in 3 directories (empty, tiny, some of several blocks, some shared) and one large."""
    rng = random.Random(29)
    shared = rng.randbytes(30_000)
    files = {}
    for n in range(FILES):
        size = [0, 40, 3_000, 20_000, 150_000][n % 5]
        files[f"d{n % 3}/f{n:03d}.bin"] = shared if n % 7 == 0 else rng.randbytes(size)
    files["big.bin"] = rng.randbytes(1_500_000)
    write_tree(root, files)
    return files


def test_a_tree_of_small_files_is_stored_in_batches_restored_byte_exact_and_skipped_on_rerun(cql, tmp_path: Path
                                                                                             ) -> None:
    """Stores 300 small files in 3 directories (empty, tiny, multi-block, some identical) and a 1.5 MB one with
    `casstor store DIR PREFIX`; checks that the node answered fewer than 2.5 requests a file (one file at a time
    takes ~6: the files went in batches), that each file's counts are a lone store's (identical files: one is
    new, its copies find its block), that `casstor restore` gives every file back byte-exact, and that a re-run
    skips every file."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    files = _small_tree(src)
    count = ClientRequests(cql)
    before = count()
    proc = run_casstor("store", str(src), "batched/", "--json")
    requests = count() - before - 1
    assert proc.stdout, proc.stderr.decode()[-3000:]
    report = json.loads(proc.stdout)
    assert report["exit_code"] == 0 and {r["status"] for r in report["files"]} == {STORED}, proc.stderr
    assert requests < 2.5 * len(files), requests
    rows = {r["id"]: r for r in report["files"]}
    copies = [rows[f"batched/{name}"] for name, data in files.items() if data == files["d0/f000.bin"]]
    assert sorted(r["new_blocks"] for r in copies)[-1] > 0 and sum(r["new_blocks"] > 0 for r in copies) == 1
    store = Store(cql)
    for name, data in files.items():
        head = store.stat(f"batched/{name}")
        assert head.size == len(data) and head.hash == source_file_hash(io.BytesIO(data), store.settings), name

    restored = run_casstor("restore", "batched/", str(dest), "--quiet")
    assert restored.returncode == 0, restored.stderr
    for name, data in files.items():
        assert (dest / name).read_bytes() == data, name
    rerun = run_casstor("store", str(src), "batched/", "--json")
    assert rerun.stdout, rerun.stderr.decode()[-3000:]
    again = json.loads(rerun.stdout)
    assert {r["status"] for r in again["files"]} == {"skipped"}


def test_put_many_answers_each_file_as_a_lone_store_does(empty_store) -> None:
    """Stores a batch through `Store.put_many`: new content, a copy of it, an empty file, a multi-block one, an
    invalid ID and a reader that fails with EIO. Checks: the two failures fail themselves only (an error in their
    place), every other result has the size, block count, file hash and committed version a lone store would
    report, the copy counts no new block, and a second batch of the same content stores no new block."""
    rng = random.Random(3)
    data, multi = rng.randbytes(5_000), rng.randbytes(200_000)

    class Failing(io.RawIOBase):
        def read(self, size: int = -1) -> bytes:
            raise OSError(5, "Input/output error")

    store = Store(empty_store)
    results = store.put_many([SmallFile("pm/a", data), SmallFile("pm/copy", io.BytesIO(data)),
                              SmallFile("pm/empty", b""), SmallFile("pm/bad\x00id", b"x"),
                              SmallFile("pm/eio", Failing()), SmallFile("pm/multi", multi)])
    assert [type(r).__name__ for r in results[3:5]] == ["CasstorError", "OSError"]
    good = [r for n, r in enumerate(results) if n not in (3, 4)]
    for result, content in zip(good, [data, data, b"", multi]):
        head = store.stat(result.id)
        assert (result.bytes, result.hash, result.version) == (len(content), head.hash, head.version)
        assert result.hash == source_file_hash(io.BytesIO(content), SESSION_SETTINGS)
    assert [r.new_blocks for r in good[:3]] == [1, 0, 0] and good[3].blocks == good[3].new_blocks > 1
    assert {info.id for info in store.list("pm/")} == {"pm/a", "pm/copy", "pm/empty", "pm/multi"}
    again = store.put_many([SmallFile("pm/a2", data), SmallFile("pm/multi2", multi)])
    assert [r.new_blocks for r in again] == [0, 0]


def test_a_file_unreadable_mid_batch_fails_only_itself(cql, tmp_path: Path) -> None:
    """Injects, in the middle of one batch of a tree's small files, a file that vanished after the listing and one
    replaced by a FIFO (refused, never read: root can read any mode bits, so neither is a chmod); checks that just
    those two rows fail with one line each and every other file of the batch is stored and readable."""
    src = tmp_path / "src"
    write_tree(src, {f"f{n:02d}.txt": f"file {n}\n".encode() * (n + 1) for n in range(20)})
    entries = list_source(str(src), "unreadable/")
    os.remove(src / "f05.txt")
    os.remove(src / "f11.txt")
    os.mkfifo(src / "f11.txt")
    store = Store(cql)
    entries_batch = BatchedEntries(store.namespace)
    rows = [_row(e.file_id, e.path) for e in entries]
    with WriterLease(cql, "store") as lease:
        errors = store_small_files(Store(cql, settings=store.settings, entries=entries_batch), entries, rows, lease,
                                   listed=ListedHeads(store, entries_batch))
    entries_batch.flush()
    failed = {e.file_id: str(err) for e, err in zip(entries, errors) if err is not None}
    assert set(failed) == {"unreadable/f05.txt", "unreadable/f11.txt"}
    assert failed["unreadable/f05.txt"] == VANISHED and "is a FIFO" in failed["unreadable/f11.txt"]
    assert [r["status"] for r in rows].count(STORED) == 18
    for entry, row in zip(entries, rows):
        if row["status"] == STORED:
            out = io.BytesIO()
            store.restore(entry.file_id, out)
            assert out.getvalue() == Path(entry.path).read_bytes()
