"""A tree store shared by client processes (`casstor_ops.store.bulk.tree_processes`): every file reported once and
restored byte-exact, and a killed command leaves no process storing on and every file old or new."""

from __future__ import annotations

import os
import random
import re
from collections import Counter
import signal
import time
from pathlib import Path

import pytest

from casstor_ops.errors import EXIT_ERROR, EXIT_LEASE_LAPSED, CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.bulk import tree, tree_processes
from casstor_ops.store.bulk.tree import parts, restore_tree, small_batches, store_tree
from casstor_ops.store.bulk.tree_files import SKIPPED, STORED
from casstor_ops.store.trees.source_listing import SYMLINK_NOT_FOLLOWED, list_source

from .faults import BackgroundJob
from .support import CASSTOR, run_casstor, write_tree


def _small_tree(tag: str, directories: int, per_directory: int) -> dict[str, bytes]:
    return {f"d{d}/f{n:03d}.txt": f"{tag} {d} {n} ".encode() * (10 + n % 50)
            for d in range(directories) for n in range(per_directory)}


def _read_tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_tree_stored_by_two_processes_reports_every_file_and_restores_byte_exact(cql, tmp_path, monkeypatch):
    """600 small files in 4 directories (3 batches), one file of 2 MB (stored alone, in this process's part) and a
    symlink to a file at the end of the path order (in the child's part: skipped, its reason reported), a part
    needing 100 small files: checks that one child process stored a part, that the report has one row per file
    with its status, that the tree restores byte-exact, and that a re-run by two processes finds every file
    unchanged."""
    store = Store(cql)
    monkeypatch.setattr(tree, "MIN_PART_FILES", 100)
    started = []
    real = tree_processes._Child

    class Counted(real):
        def __init__(self, *args) -> None:
            started.append(args)
            super().__init__(*args)

    monkeypatch.setattr(tree_processes, "_Child", Counted)
    files = {**_small_tree("two", 4, 150), "a/large.bin": random.Random(1).randbytes(2_000_000)}
    src = tmp_path / "src"
    write_tree(src, files)
    (src / "z-link").symlink_to(src / "d0" / "f000.txt")

    report = store_tree(store, src, "procs/", processes=2)
    assert len(started) == 1
    statuses = {row["id"]: row["status"] for row in report.rows}
    assert len(report.rows) == len(statuses) == len(files) + 1
    assert statuses.pop("procs/z-link") == SKIPPED and set(statuses.values()) == {STORED}
    assert [row["error"] for row in report.skipped_with_reason] == [SYMLINK_NOT_FOLLOWED] and report.exit_code == 0

    out = tmp_path / "out"
    assert restore_tree(store, "procs/", out).exit_code == 0
    assert _read_tree(out) == files

    again = store_tree(store, src, "procs/", processes=2)
    assert len(started) == 2 and {row["status"] for row in again.rows} == {SKIPPED}


def _parts(pid: int) -> list[int]:
    """The child processes of ``pid`` that store a part (not multiprocessing's resource tracker)."""
    try:
        children = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []
    return [child for child in children if b"spawn_main" in _cmdline(child)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _versions(cql) -> Counter:
    """Versions a file, of every file in the store."""
    return Counter(row.id for row in cql.execute("SELECT id FROM casstor_meta.versions"))


def _versions_of(cql, file_id: str) -> int:
    return cql.execute("SELECT COUNT(*) FROM casstor_meta.versions WHERE id = %s", (file_id,)).one()[0]


@pytest.mark.slow
def test_a_killed_tree_store_leaves_no_process_storing_and_every_file_old_or_new(empty_store, tmp_path):
    """Injects: SIGKILL of the `casstor store --processes 2` command (its own pid only, not its group) re-storing
    6,400 small files with new content, as soon as its child process has committed the first batch of its part
    (3,200 files, 13 batches). Checks: the child is gone within 10 s, and 1 s later some files of its part are
    still at their old version (the child died with its parent instead of storing on: without PR_SET_PDEATHSIG it
    stored its whole part and this check failed); every file restores as its old or its new content, never
    another; and a re-run stores the rest, after which every file is new."""
    src = tmp_path / "src"
    old = _small_tree("old", 32, 200)
    write_tree(src, old)
    assert run_casstor("store", str(src), "killed/", "--quiet", "--processes", "1").returncode == 0
    new = _small_tree("new", 32, 200)
    write_tree(src, new)
    child_part = [f.file_id for batch in parts(small_batches(list_source(src, "killed/")), 2)[1] for f in batch]

    job = BackgroundJob([*CASSTOR, "store", str(src), "killed/", "--quiet", "--processes", "2"], tmp_path / "store.log")
    try:
        deadline = time.monotonic() + 60
        while _versions_of(empty_store, child_part[0]) < 2 and time.monotonic() < deadline and job.running():
            time.sleep(0.01)
        children = [pid for pid in _parts(job.proc.pid) if _alive(pid)]
        assert children and job.running(), f"the store ended before the kill: {job.output()[-2000:]}"
        os.kill(job.proc.pid, signal.SIGKILL)
        job.proc.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in children)
        time.sleep(1)
        versions = _versions(empty_store)
        assert [file_id for file_id in child_part if versions[file_id] == 1]
    finally:
        job.kill()

    out = tmp_path / "out"
    restore_tree(Store(empty_store), "killed/", out)
    restored = _read_tree(out)
    assert set(restored) == set(new)
    assert all(restored[name] in (old[name], new[name]) for name in new)
    assert run_casstor("store", str(src), "killed/", "--quiet").returncode == 0
    restore_tree(Store(empty_store), "killed/", out, force=True)
    assert _read_tree(out) == new


def _part_run(store: Store, part: list, progress) -> tree.TreeReport:
    """A part's run for the tests below (module level: a spawned child imports it): ``["fail"]`` fails as a
    lapsed lease does, ``["die"]`` ends the process without a word, anything else reports a row per item."""
    if part == ["fail"]:
        raise CasstorError("store: the writer lease lapsed (injected)", EXIT_LEASE_LAPSED)
    if part == ["die"]:
        os._exit(9)
    return tree.TreeReport("store", rows=[{"id": item, "status": STORED} for item in part])


@pytest.mark.parametrize("part, message, code", [(["fail"], "lease lapsed (injected)", EXIT_LEASE_LAPSED),
                                                  (["die"], "ended with status 9 and no report", EXIT_ERROR)])
def test_a_failing_part_fails_the_command_with_its_error(cql, part, message, code):
    """Injects, in the child storing the second part: a CasstorError with the lease's exit code, or an exit
    without a report (as a child killed or out of memory). Checks: the command raises one CasstorError with that
    message and exit code; and a good part's rows come back in part order."""
    with pytest.raises(CasstorError, match=re.escape(message)) as failed:
        tree_processes.in_processes(Store(cql), [["a"], part], _part_run, None)
    assert failed.value.exit_code == code
    report = tree_processes.in_processes(Store(cql), [["a"], ["b", "c"], ["d"]], _part_run, None)
    assert [row["id"] for row in report.rows] == ["a", "b", "c", "d"]
