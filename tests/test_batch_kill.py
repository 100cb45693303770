"""A tree store killed inside a batch's commit: every file old or new, and reclaim keeps what the heads name.

:class:`~casstor_ops.store.engine.batch_upload.BatchUpload` writes a batch's block
lists, then (once they are acknowledged) its heads. A client killed between
the two must leave each file of that batch at its old version, with the new
lists orphans that reclaim may free, and every file of the batches before it
at its new version.

Fault injection (~2 min): marked ``slow``, run by ``make test-all``.
"""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

import pytest

from casstor_ops.store.api import Store
from casstor_ops.store.bulk.tree import small_batches
from casstor_ops.store.trees.source_listing import list_source

from .faults import BackgroundJob
from .support import reclaim_all_but_heads, run_casstor, write_tree

DIRECTORIES, PER_DIRECTORY = 3, 100
KILLED_BATCH = 2   # of small_batches' (two at its 256 files a batch)
PREFIX = "batch-kill/"


def _tree(tag: str) -> dict[str, bytes]:
    """Small files of one block (their list kept in their version row), and every tenth of several blocks (its list
    in ``file_blocks``: 200 KB of random bytes, ~4 blocks of the test store's 48 KiB average)."""
    return {f"d{d}/f{n:03d}.txt": random.Random(f"{tag} {d} {n}").randbytes(200_000) if _listed(n)
            else f"{tag} {d} {n} ".encode() * (20 + n * 7 % 300)
            for d in range(DIRECTORIES) for n in range(PER_DIRECTORY)}


def _listed(n: int) -> bool:
    return n % 10 == 0


def _content(store: Store, file_id: str) -> bytes:
    out = io.BytesIO()
    store.restore(file_id, out)
    return out.getvalue()


def _orphan_lists(cql) -> set[str]:
    """The files with a block list of a version that has no version row (the test's store holds only this tree)."""
    versions = {(row.id, row.version) for row in cql.execute("SELECT id, version FROM casstor_meta.versions")}
    lists = {(row.id, row.version) for row in cql.execute("SELECT DISTINCT id, version FROM casstor_meta.file_blocks")}
    return {file_id for file_id, _ in lists - versions}


@pytest.mark.slow
def test_a_client_killed_between_a_batchs_lists_and_heads_leaves_every_file_old_or_new(empty_store, tmp_path: Path
                                                                                       ) -> None:
    """Injects: SIGKILL of a tree store (`tests/batch_kill_writer.py`, the CLI's store with one worker) re-storing
    300 small files in 3 directories with new content, right after the 2nd batch's first commit write is
    acknowledged (its block lists), before its heads are sent. Checks: the process died by SIGKILL; the batch's
    files of several blocks have block lists no version row names (the kill hit the window; a one-block file's
    list is its version row); every file restores as its old or its
    new content, the first batch's files as new and the killed batch's as old; a `casstor reclaim` then
    (commit bound 1 s: every version but the heads forgotten) leaves every head in place and restorable
    byte-exact as old or new; and a re-run stores the rest. Written heads-first (the order reversed), the kill
    falls after the heads and before their lists, and the killed batch's files cannot be restored."""
    cql = empty_store
    store = Store(cql)
    src = tmp_path / "src"
    old = _tree("old")
    write_tree(src, old)
    first = run_casstor("store", str(src), PREFIX, "--quiet")
    assert first.returncode == 0, first.stderr
    new = _tree("new")
    write_tree(src, new)

    job = BackgroundJob([sys.executable, "-m", "tests.batch_kill_writer", str(KILLED_BATCH), str(src), PREFIX],
                        tmp_path / "store.log")
    code, output = job.wait(600)
    assert code == -9, output[-3000:]

    ids = {f"{PREFIX}{name}": name for name in old}
    batches = [[e.file_id for e in batch] for batch in small_batches(list_source(str(src), PREFIX))]
    restored = {file_id: _content(store, file_id) for file_id in ids}
    for file_id, name in ids.items():
        assert restored[file_id] in (old[name], new[name]), file_id
    state = {file_id: "new" if restored[file_id] == new[name] else "old" for file_id, name in ids.items()}
    assert {state[i] for batch in batches[:KILLED_BATCH - 1] for i in batch} == {"new"}
    killed = batches[KILLED_BATCH - 1]
    assert {state[i] for i in killed} == {"old"}
    several = {i for i in killed if _listed(int(i[-7:-4]))}
    assert several and _orphan_lists(cql) == several, "the kill did not fall between the lists and the heads"

    heads = {file_id: store.stat(file_id).version for file_id in ids}
    reclaim_all_but_heads(cql)
    for file_id in ids:
        assert store.stat(file_id).version == heads[file_id]
        assert _content(store, file_id) == restored[file_id], file_id

    again = run_casstor("store", str(src), PREFIX, "--quiet")
    assert again.returncode == 0, again.stderr
    assert all(_content(store, file_id) == new[name] for file_id, name in ids.items())
