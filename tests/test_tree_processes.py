"""A tree store shared by client processes (`casstor_ops.store.bulk.tree_processes`): every file reported once and
restored byte-exact, and a killed command leaves no process storing on and every file old or new."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest

from casstor_ops.errors import EXIT_ERROR, EXIT_LEASE_LAPSED, CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.bulk import tree, tree_processes
from casstor_ops.store.bulk.tree import restore_tree, store_tree
from casstor_ops.store.bulk.tree_files import SKIPPED, STORED
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.trees.source_listing import SYMLINK_NOT_FOLLOWED

from .faults import BackgroundJob
from .serve_support import writer_leases
from .support import CASSTOR, ROOT, run_casstor, write_tree


def _small_tree(tag: str, directories: int, per_directory: int) -> dict[str, bytes]:
    return {f"d{d}/f{n:03d}.txt": f"{tag} {d} {n} ".encode() * (10 + n % 50)
            for d in range(directories) for n in range(per_directory)}


def _read_tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_tree_stored_by_two_processes_reports_every_file_and_restores_byte_exact(cql, tmp_path, monkeypatch):
    """2,400 small files in 10 directories (10 batches: more items than this process queues at once), one file of 2 MB (stored alone) and a symlink (skipped, its
    reason reported), a process needing 100 small files: checks that one child process was started (by the
    starter thread once the first file was found new: spawned by a worker thread, it was killed when that thread
    ended and the store failed with status -9), that the report has one row per file with its status, that the
    tree restores byte-exact, and that a re-run with two processes allowed finds every file unchanged without
    starting the second (no file to read: nothing to share). (Which process takes which item:
    test_every_item_is_taken_once...)"""
    store = Store(cql)
    monkeypatch.setattr(tree, "MIN_PROCESS_FILES", 100)
    started = []
    real = tree_processes._Child

    class Counted(real):
        def __init__(self, *args) -> None:
            started.append(args)
            super().__init__(*args)

    monkeypatch.setattr(tree_processes, "_Child", Counted)
    files = {**_small_tree("two", 10, 240), "a/large.bin": random.Random(1).randbytes(2_000_000)}
    src = tmp_path / "src"
    write_tree(src, files)
    (src / "z-link").symlink_to(src / "d0" / "f000.txt")
    time.sleep(1.1)  # older than RACY_CTIME_NS when stored: their inodes and change times are recorded

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
    assert len(started) == 1 and {row["status"] for row in again.rows} == {SKIPPED}
    assert len(again.rows) == len(files) + 1


def _parts(pid: int) -> list[int]:
    """The child processes of ``pid`` that store a part (forked by the command's standby, or spawned; not
    multiprocessing's resource tracker), whichever of its threads started them."""
    children = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += [int(child) for child in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return [child for child in children if b"resource_tracker" not in _cmdline(child)]


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


def _storing_in_two(cql) -> bool:
    """Both processes hold their writer lease (the first command's was released) and the tree's first file (the
    first item taken) has its new version: two small reads, so the kill lands early in a ~2 s store."""
    leases = cql.execute("SELECT COUNT(*) FROM casstor_meta.writer_leases").one()[0]
    first = cql.execute("SELECT COUNT(*) FROM casstor_meta.versions WHERE id = %s", ("killed/d0/f000.txt",)).one()[0]
    return leases == 2 and first > 1


@pytest.mark.slow
def test_a_killed_tree_store_leaves_no_process_storing_and_every_file_old_or_new(empty_store, tmp_path):
    """Injects: SIGKILL of the `casstor store --processes 2` command (its own pid only, not its group) re-storing
    6,400 small files with new content (25 batches), as soon as its child process holds its writer lease (it is
    storing) and the first file is new. Checks: the child is gone within 10 s, and 1 s later some files are still at
    their old version and both writer leases are still held: the child died with its parent instead of storing on
    (without PR_SET_PDEATHSIG it took every item left, ended and released its lease, and this check failed; the
    items the parent had queued stayed old either way); every file restores as its old or its new content, never
    another; and a re-run stores the rest, after which every file is new."""
    src = tmp_path / "src"
    old = _small_tree("old", 32, 200)
    write_tree(src, old)
    assert run_casstor("store", str(src), "killed/", "--quiet", "--processes", "1").returncode == 0
    new = _small_tree("new", 32, 200)
    write_tree(src, new)

    job = BackgroundJob([*CASSTOR, "store", str(src), "killed/", "--quiet", "--processes", "2"], tmp_path / "store.log")
    try:
        deadline = time.monotonic() + 60
        while not _storing_in_two(empty_store) and time.monotonic() < deadline and job.running():
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
        assert len(versions) == len(new) and 1 in versions.values()
        dead = writer_leases(empty_store)
        assert len(dead) == 2
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
    # The killed processes' leases live on for their TTL (60 s): a later test that waits for no writer would time out.
    for writer in dead:
        empty_store.execute(Statements.for_session(empty_store).delete_lease, (writer,))


def _taking(store: Store, taken, progress, on_work, fault: str | None = None) -> tree.TreeReport:
    """A process's run for the tests below (module level: a spawned child imports it). In a child, ``fault``
    ``"fail"`` fails as a lapsed lease does and ``"die"`` ends the process without a word, before taking any item;
    else a row per item taken, with its process, and its length to ``progress``: this process slowly (20 ms an
    item; ``on_work`` called at each), a child at once."""
    child = multiprocessing.parent_process() is not None
    assert child == (on_work is None)
    if child and fault == "fail":
        raise CasstorError("store: the writer lease lapsed (injected)", EXIT_LEASE_LAPSED)
    if child and fault == "die":
        os._exit(9)
    rows = []
    for item in taken:
        if not child:
            on_work()
        rows.append({"id": item, "status": STORED, "pid": os.getpid()})
        if progress is not None:
            progress(len(item))
        if not child:
            time.sleep(0.02)
    return tree.TreeReport("store", rows=rows)


def test_every_item_is_taken_once_a_faster_process_takes_more_and_its_progress_comes_back(cql):
    """300 items, two processes: this one takes an item every 20 ms (6 s alone), the child (started in ~0.3 s)
    as fast as it can, each reporting an item's length as progress. Checks: every item has one row, the child
    took most of them, and this process's progress counted every item's length once (the child's came back)."""
    items = [f"i{n:03d}" for n in range(300)]
    sizes: list[int] = []
    report = tree_processes.in_processes(Store(cql), items, 2, _taking, sizes.append)
    assert sorted(row["id"] for row in report.rows) == items
    assert sum(row["pid"] != os.getpid() for row in report.rows) > 150
    assert sum(sizes) == sum(map(len, items))


@pytest.mark.parametrize("fault, message, code", [("fail", "lease lapsed (injected)", EXIT_LEASE_LAPSED),
                                                   ("die", "ended with status 9 and no report", EXIT_ERROR)])
def test_a_failing_child_fails_the_command_with_its_error(cql, fault, message, code):
    """Injects, in the child process: a CasstorError with the lease's exit code, or an exit without a report (as
    a child killed or out of memory). Checks: the command raises one CasstorError with that message and exit
    code, once this process has taken every item the child did not."""
    taken = []
    with pytest.raises(CasstorError, match=re.escape(message)) as failed:
        tree_processes.in_processes(Store(cql), ["a", "b", "c"], 2, partial(_record, taken, fault=fault), None)
    assert failed.value.exit_code == code and taken == ["a", "b", "c"]


def test_no_process_starts_before_this_one_has_work(cql):
    """20 items, two processes allowed, a run that never calls ``on_work`` (an unchanged re-run: every file listed
    unchanged). Checks: no child process was alive during the run, and this process took every item."""
    alive = []

    def run(store, taken, progress, on_work):
        rows = []
        for item in taken:
            alive.extend(child for child in multiprocessing.active_children() if child.name == "casstor-store-part")
            rows.append({"id": item, "status": SKIPPED, "pid": os.getpid()})
            time.sleep(0.01)
        return tree.TreeReport("store", rows=rows)

    items = [f"i{n:02d}" for n in range(20)]
    report = tree_processes.in_processes(Store(cql), items, 2, run, None)
    assert [row["id"] for row in report.rows] == items and {row["pid"] for row in report.rows} == {os.getpid()}
    assert alive == []


def _asked_from_a_passing_thread(store: Store, taken, progress, on_work) -> tree.TreeReport:
    """A process's run: this one calls ``on_work`` from a thread that ends at once, then takes an item every 20 ms;
    a child takes one every 10 ms (both well after that thread ended)."""
    if on_work is not None:
        asking = threading.Thread(target=on_work)
        asking.start()
        asking.join()
    rows = []
    for item in taken:
        rows.append({"id": item, "status": STORED, "pid": os.getpid()})
        time.sleep(0.02 if on_work is not None else 0.01)
    return tree.TreeReport("store", rows=rows)


def test_a_child_outlives_the_thread_that_asked_for_it(cql):
    """Injects: ``on_work`` called from a thread that ends before the child starts taking items (as a runner's
    worker thread may end before the children do). Checks: the command ends without error, every item has one row,
    and the child took some: it was not killed when that thread ended (PR_SET_PDEATHSIG follows the thread that
    spawned a child: spawned by the asking thread, it died with status -9 and the command failed)."""
    items = [f"i{n:03d}" for n in range(100)]
    report = tree_processes.in_processes(Store(cql), items, 2, _asked_from_a_passing_thread, None)
    assert sorted(row["id"] for row in report.rows) == items
    assert any(row["pid"] != os.getpid() for row in report.rows)


def _record(taken: list, store: Store, items, progress, on_work, fault: str) -> tree.TreeReport:
    """:func:`_taking`, the items this process took added to ``taken``."""
    report = _taking(store, items, progress, on_work, fault)
    taken.extend(row["id"] for row in report.rows if row["pid"] == os.getpid())
    return report


# Run in a process of its own, one thread until the standby has forked (this test process runs the driver's).
_STANDBY_SCRIPT = """
import json, os
from casstor_ops.store.api import Store
from casstor_ops.store.bulk import tree_processes
from tests.test_tree_processes import _taking
with tree_processes.Standby(1) as standby, Store.open() as store:
    ready = standby.ready
    report = tree_processes.in_processes(store, [f"i{n:03d}" for n in range(300)], 2, _taking, None, standby)
print(json.dumps({"ready": ready, "me": os.getpid(), "rows": report.rows}))
"""


def test_a_standby_forked_before_the_store_connects_takes_items(cql):
    """A process forks a standby child while it is one thread, then connects and shares 300 items with it (this one
    slowly, 20 ms an item), on the session's node (``cql``: its environment names it). Checks: the standby was
    ready (forked), every item has one row, and the child took most of them."""
    done = subprocess.run([sys.executable, "-c", _STANDBY_SCRIPT], capture_output=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = json.loads(done.stdout)
    assert out["ready"] is True
    assert sorted(row["id"] for row in out["rows"]) == [f"i{n:03d}" for n in range(300)]
    assert sum(row["pid"] != out["me"] for row in out["rows"]) > 150


def test_a_standby_is_not_forked_while_other_threads_run():
    """Injects: a thread running beside the one making the standby (as the driver's run once a store connects).
    Checks: it forks no child (a fork could inherit a lock that thread holds, taken forever), so a store spawns."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with tree_processes.Standby(1) as standby:
            assert not standby.ready
            assert not [c for c in multiprocessing.active_children() if c.name == "casstor-store-part"]
    finally:
        stop.set()
        other.join()


def test_standby_children_left_unused_end_with_the_command(cql, tmp_path):
    """A tree of 20 small files stored with --processes 3: two children are forked before the store connects and
    none is given work (too few files for a second process). Checks: the command ends at once with every file
    stored (a child still holding the other's pipe end would never read its end of file, and the command would
    wait on it forever)."""
    src = tmp_path / "src"
    write_tree(src, _small_tree("unused", 2, 10))
    started = time.monotonic()
    done = run_casstor("store", str(src), "unused/", "--json", "--processes", "3", timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert {row["status"] for row in json.loads(done.stdout)["files"]} == {STORED}
    assert time.monotonic() - started < 30
