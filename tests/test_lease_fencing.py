"""Leases fence their holders: a store or a reclaim whose lease lapsed stops before its next commit or delete.

Real node and local Spark; leases shortened to a TTL of 6 s (heartbeat 2 s) so a lapse takes seconds.
"""

from __future__ import annotations

import io
import os
import random
import signal
import subprocess
import threading
import time
from typing import Callable

import pytest

from casstor_ops.errors import EXIT_LEASE_LAPSED, LeaseLapsedError
from casstor_ops.ops import reclaim as reclaim_module
from casstor_ops.ops.reclaim import reclaim
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.leases import active_writers
from casstor_ops.store.coordination.reclaim_window import ReclaimWindow, current_window, holder_alive
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS

from .support import CASSTOR
from .test_reclaim import (KiB, content_keys, forget_superseded, index_rows, make_garbage, put, restored,
                           shared_corpus)

MiB = 1024 * KiB
LEASE_ENV = {"CASSTOR_LEASE_TTL_S": "6", "CASSTOR_HEARTBEAT_S": "2"}


@pytest.fixture()
def store(empty_store, monkeypatch):
    for name, value in LEASE_ENV.items():
        monkeypatch.setenv(name, value)
    yield Store(empty_store)
    set_commit_bound(empty_store, SAFETY.commit_bound_s)


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.1)


def test_a_store_paused_past_its_lease_ttl_commits_nothing(store, spark) -> None:
    """Injects: a ``casstor store`` subprocess (lease TTL 6 s) of removed file c's content and then random data,
    read from stdin, SIGSTOPped once its lease row exists and it writes blocks of its own (so it has found c's
    blocks stored), while an offline reclaim waits for the lease to expire and deletes c's blocks (no version
    names them: c's were forgotten before the store began); then SIGCONT and the end of the source.
    Checks: the store exits 11 with one ``casstor:`` line and no traceback, 'big' is still its previous version,
    and every committed file restores byte-exact (without the fence, 'big' names c's deleted blocks)."""
    cql = store.session
    files = make_garbage(store)
    forget_superseded(cql)
    set_commit_bound(cql, SAFETY.commit_bound_s)  # the store relies on its checks for the usual bound
    removed = shared_corpus()["c"]
    files["big"] = random.Random(3).randbytes(300 * KiB)
    put(store, "big", files["big"])
    checked = {block_hash(chunk) for chunk in chunks(io.BytesIO(removed), store.settings)}
    assert checked <= set(index_rows(cql))  # garbage, stored
    content_before = len(content_keys(cql))
    rng = random.Random(4)
    proc = subprocess.Popen([*CASSTOR, "store", "-", "big"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        with proc.stdin as source:
            source.write(removed)
            # Fed a MiB at a time: the store's requests progress while it reads, not while it waits for input.
            while not (active_writers(cql) == 1 and len(content_keys(cql)) > content_before + 20):
                assert proc.poll() is None, proc.stderr.read().decode()
                source.write(rng.randbytes(MiB))
                source.flush()
            os.kill(proc.pid, signal.SIGSTOP)
            assert reclaim(spark, cql).exit_code == 0
            assert not checked & (set(index_rows(cql)) | content_keys(cql))
            os.kill(proc.pid, signal.SIGCONT)
            source.write(rng.randbytes(2 * MiB))
        proc.wait(timeout=300)  # not communicate(): it would flush the stdin this test already closed
        stderr = proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()
    for file_id, data in files.items():
        assert restored(store, file_id) == data, file_id
    lines = stderr.decode().strip().splitlines()
    assert proc.returncode == EXIT_LEASE_LAPSED, lines
    assert len(lines) == 1 and lines[0].startswith(
        "casstor: the writer lease (store) may have lapsed before committing 'big': last heartbeat "), lines
    assert "lease TTL 6 s" in lines[0]
    assert active_writers(cql) == 0 and current_window(cql) is None


def test_a_reclaim_whose_heartbeat_lapsed_stops_before_undoing_a_second_reclaim(store, spark, monkeypatch) -> None:
    """Injects: a block x of file 'f' without its index row (a crash between a reclaim's two deletes); a first,
    online reclaim plans to repair it and stalls in its block-list deletes (the step before the repairs), every
    heartbeat failing from then on; 'f' is removed; a second reclaim takes the window over once the first's
    heartbeat row expired, and deletes x (unreferenced now); then the first goes on.
    Checks: the first raises LeaseLapsedError naming the failed heartbeat and writes no index row for x (without
    the fence it would, vouching for deleted content); 'f' stored again restores byte-exact, as does every file."""
    cql = store.session
    files = make_garbage(store)
    f_data = random.Random(5).randbytes(200 * KiB)
    put(store, "f", f_data)
    x = cql.execute(f"SELECT hash FROM {META_KS}.file_blocks WHERE id = 'f' AND version = %s",
                    (store.stat("f").version,)).one().hash
    cql.execute(f"DELETE FROM {DATA_KS}.existing_blocks WHERE hash = %s", (x,))
    set_commit_bound(cql, 1)  # a short online wait

    stalled, go_on = threading.Event(), threading.Event()
    real_apply, real_beat = reclaim_module._apply, ReclaimWindow._beat
    first_holder: list[str] = []

    def stall_first(df, statement_name, params):
        if threading.current_thread() is first and statement_name == "delete_block_list_at":
            stalled.set()
            go_on.wait(300)
        return real_apply(df, statement_name, params)

    def failing_beat(window: ReclaimWindow, ttl_s: int) -> None:
        if not first_holder:
            first_holder.append(window.holder)
        if stalled.is_set() and window.holder == first_holder[0]:
            raise ConnectionError("simulated: the first reclaim cannot reach Cassandra")
        real_beat(window, ttl_s)

    monkeypatch.setattr(reclaim_module, "_apply", stall_first)
    monkeypatch.setattr(ReclaimWindow, "_beat", failing_beat)
    failure: list[BaseException] = []

    def run_first() -> None:
        try:
            reclaim(spark, cql, online=True)
        except BaseException as err:  # noqa: B036  (reported to the test's thread)
            failure.append(err)

    first = threading.Thread(target=run_first)
    first.start()
    try:
        wait_until(lambda: stalled.is_set() or not first.is_alive(), "the first reclaim stalls")
        assert stalled.is_set(), failure
        store.remove("f")  # allowed: the window is online
        wait_until(lambda: not holder_alive(cql, current_window(cql)), "the first reclaim's heartbeat row expires", 30)
        outcome = reclaim(spark, cql)
        assert outcome.plan.unindexed.blocks >= 1  # it resumed, found x's content without index, deleted it
        assert x not in content_keys(cql)
    finally:
        go_on.set()
        first.join(300)
    assert x not in index_rows(cql) and current_window(cql) is None
    assert len(failure) == 1 and isinstance(failure[0], LeaseLapsedError), failure
    assert str(failure[0]).startswith(f"the reclaim window's lease ({first_holder[0]}) may have lapsed before "
                                      f"repairing index rows: last heartbeat ")
    assert "(last error: ConnectionError: simulated: the first reclaim cannot reach Cassandra)" in str(failure[0])
    put(store, "f", f_data)
    for file_id, data in {**files, "f": f_data}.items():
        assert restored(store, file_id) == data, file_id
