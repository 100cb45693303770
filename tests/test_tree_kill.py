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
from pathlib import Path

from casstor_ops.store.api import Store

from .faults import BackgroundJob, wait_until
from .support import CASSTOR, reclaim_all_but_heads, run_casstor

FILES = 600
PREFIX = "tree-kill/"


def _write(src: Path, tag: str) -> dict[str, bytes]:
    """Each file rewritten with ``tag``'s content of the same size, its mtime set back (as ``cp -p`` would): only
    the change time tells the new content from the old."""
    contents = {}
    for n in range(FILES):
        path, data = src / f"f{n:04d}.txt", f"{tag} {n} ".encode() * (50 + n % 40)
        then = path.stat().st_mtime_ns if path.exists() else 1_700_000_000 * 10**9
        path.write_bytes(data)
        os.utime(path, ns=(then, then))
        contents[f"{PREFIX}f{n:04d}.txt"] = data
    return contents


def _content(store: Store, file_id: str) -> bytes:
    out = io.BytesIO()
    store.restore(file_id, out)
    return out.getvalue()


def _versions(cql) -> int:
    return cql.execute("SELECT COUNT(*) FROM casstor_meta.versions").one()[0]


def test_tree_store_killed_before_its_entry_flush_is_old_or_new_and_the_rerun_lists_every_file(empty_store,
                                                                                               tmp_path: Path
                                                                                               ) -> None:
    """Injects: SIGKILL of `casstor store DIR PREFIX` re-storing 600 files of one directory rewritten with content of
    the same size and their mtimes set back, once some new versions are committed (entries wait for a batch of
    64 per directory). Checks: the kill hit the window (some head is not the version its listing names); every
    file's head is its old or its new content, never another, also after a `casstor reclaim` run then (commit
    bound 1 s: every version but the heads forgotten; the heads no entry names yet keep their blocks); the re-run
    exits 0, and afterwards every file is listed with its head's version and restores as the new content (without
    `ListedHeads.relist` the entries keep naming the old versions)."""
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
    for file_id in old:
        assert _content(store, file_id) in (old[file_id], new[file_id]), file_id
    reclaim_all_but_heads(cql)
    for file_id, head in heads.items():
        assert store.stat(file_id).version == head.version
        assert _content(store, file_id) in (old[file_id], new[file_id]), file_id

    again = run_casstor("store", str(src), PREFIX, "--quiet")
    assert again.returncode == 0, again.stderr
    listed = {info.id: info.version for info in store.list(PREFIX)}
    assert listed == {file_id: store.stat(file_id).version for file_id in new}
    assert all(_content(store, file_id) == data for file_id, data in new.items())
