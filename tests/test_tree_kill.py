"""A tree store killed between its versions and its batched entries: every file old or new, the re-run lists all.

A tree store (``casstor store DIR PREFIX``) writes each file's version row
(the commit point) at once and its directory entry in a batch per directory
(:class:`~casstor_ops.store.namespace.entries.BatchedEntries`), so a kill can
leave versions committed whose entries are missing or name the previous
version; the next store of the tree must write them
(:meth:`~casstor_ops.store.bulk.tree_files.ListedHeads.relist`).
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from casstor_ops.store.api import Store

from .faults import BackgroundJob, wait_until
from .support import CASSTOR, reclaim_all_but_heads, run_casstor

# 60 directories of 30 files: fewer than a directory's batch of entries (64), and more directories than wait at once
# (16), so from the first commit to the final flush the entries of up to 16 directories lag. In one directory of 600
# files the entries went every 64 files, right after each batch of 256 committed, and the 3 batches ran at once (4
# workers): a kill after a third of the versions could land after the flush (CI, once). 7 batches leave the rest of
# the store (seconds) for the kill to land in.
FILES = 1800
DIRECTORY_FILES = 30
PREFIX = "tree-kill/"


def _write(src: Path, tag: str) -> dict[str, bytes]:
    """Each file rewritten with ``tag``'s content of the same size, its mtime set back (as ``cp -p`` would): only
    the change time tells the new content from the old."""
    contents = {}
    for n in range(FILES):
        name = f"d{n // DIRECTORY_FILES:02d}/f{n:04d}.txt"
        path, data = src / name, f"{tag} {n} ".encode() * (50 + n % 40)
        path.parent.mkdir(exist_ok=True)
        then = path.stat().st_mtime_ns if path.exists() else 1_700_000_000 * 10**9
        path.write_bytes(data)
        os.utime(path, ns=(then, then))
        contents[PREFIX + name] = data
    return contents


def _content(store: Store, file_id: str) -> bytes:
    out = io.BytesIO()
    store.restore(file_id, out)
    return out.getvalue()


def _restored(store: Store, file_ids) -> dict[str, bytes]:
    """Each file's head restored, 8 at a time (one at a time, ~6 ms each, a pass over 1,800 files took 11 s)."""
    with ThreadPoolExecutor(8) as pool:
        return dict(zip(file_ids, pool.map(lambda file_id: _content(store, file_id), file_ids)))


def _versions(cql) -> int:
    return cql.execute("SELECT COUNT(*) FROM casstor_meta.versions").one()[0]


@pytest.mark.slow
def test_tree_store_killed_before_its_entry_flush_is_old_or_new_and_the_rerun_lists_every_file(empty_store,
                                                                                               tmp_path: Path
                                                                                               ) -> None:
    """Injects: SIGKILL of `casstor store DIR PREFIX` re-storing 1,800 files in 60 directories, rewritten with content
    of the same size and their mtimes set back, once a third of the new versions are committed (a directory's
    entries wait for 64 of its files or for more than 16 directories waiting). Checks: the kill hit the window
    (some head is not the version its listing names); every file's head is its old or its new content, never
    another, also after a `casstor reclaim` run then (commit bound 1 s: every version but the heads forgotten; the
    heads no entry names yet keep their blocks); the re-run exits 0, and afterwards every file is listed with its
    head's version and restores as the new content (without `ListedHeads.relist` the entries keep naming the old
    versions)."""
    cql = empty_store
    store = Store(cql)
    src = tmp_path / "src"
    src.mkdir()
    old = _write(src, "old")
    first = run_casstor("store", str(src), PREFIX, "--quiet")
    assert first.returncode == 0, first.stderr
    new = _write(src, "new")

    before = _versions(cql)
    job = BackgroundJob([*CASSTOR, "store", str(src), PREFIX, "--quiet"], tmp_path / "store.log")
    wait_until(lambda: not job.running() or _versions(cql) >= before + FILES // 3, 180,
               "a third of the new versions", poll_s=0.02)
    assert job.running(), f"the store ended before it could be killed: {job.output()}"
    job.kill()

    heads = {file_id: store.stat(file_id) for file_id in old}
    listed = {info.id: info.version for info in store.list(PREFIX)}
    assert any(listed.get(i) != head.version for i, head in heads.items()), "no entry lagged: the kill missed"
    for file_id, data in _restored(store, list(old)).items():
        assert data in (old[file_id], new[file_id]), file_id
    reclaim_all_but_heads(cql)
    for file_id, head in heads.items():
        assert store.stat(file_id).version == head.version
    for file_id, data in _restored(store, list(old)).items():
        assert data in (old[file_id], new[file_id]), file_id

    again = run_casstor("store", str(src), PREFIX, "--quiet")
    assert again.returncode == 0, again.stderr
    listed = {info.id: info.version for info in store.list(PREFIX)}
    assert listed == {file_id: store.stat(file_id).version for file_id in new}
    assert _restored(store, list(new)) == new
