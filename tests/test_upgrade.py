"""The upgrade from schema 4 to the current schema (``casstor init``), against the real test node: killed midway,
and raced by a writer of schema 4.

A schema-4 store is made as a schema-4 casstor leaves one: real files stored through the Store (real blocks, real
block lists), then their heads moved into a ``files`` table made with schema 4's DDL, copied under many IDs (each
with its own copy of the block list, as a store of the same content makes; a one-block file's list, which the
current schema keeps in its version row, written out as schema 4 had it), the later schemas' tables emptied and
``schema_version`` 4 recorded. The session store is put back to the current schema (settings, tables) after each
test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cassandra.concurrent import execute_concurrent_with_args

from casstor_ops.errors import EXIT_NOT_INITIALISED, MaintenanceError
from casstor_ops.store.api import Store
from casstor_ops.store.blocks import block_list
from casstor_ops.store.coordination.leases import WriterLease, active_writers
from casstor_ops.store.coordination.reclaim_window import WindowState, current_window
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.schema import SCHEMA_VERSION, read_settings

from .conftest import _truncate_all
from .support import CASSTOR, NO_UI, SESSION_SETTINGS, put, run_casstor
from .test_schema import _put_back, _settings_rows

# Schema 4's head table, as its casstor made it (git show fdf6f2e~1:casstor_ops/store/schema.py).
SCHEMA_4_FILES = [
    f"CREATE TABLE IF NOT EXISTS {META_KS}.files (id text PRIMARY KEY, version timeuuid, size bigint, hash blob, "
    f"blocks int, committed_at timestamp)",
    f"ALTER TABLE {META_KS}.files ADD IF NOT EXISTS (mode int, mtime_ns bigint)",
    f"ALTER TABLE {META_KS}.files ADD IF NOT EXISTS (content blob, codec text, stored_size int)"]
INSERT_HEAD = (f"INSERT INTO {META_KS}.files (id, version, size, hash, blocks, committed_at, mode, mtime_ns, "
               f"content, codec, stored_size) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
INSERT_BLOCK = f"INSERT INTO {META_KS}.file_blocks (id, version, block_offset, hash, size) VALUES (?, ?, ?, ?, ?)"
CURRENT = f"schema v{SCHEMA_VERSION}".encode()
# A short lease, so a killed init's window can be resumed within the test.
SHORT_LEASE = {"CASSTOR_LEASE_TTL_S": "3", "CASSTOR_HEARTBEAT_S": "1"}
SIZES = [1, 999, 16_384, 70_000, 300_000, 1_000_003]  # one block up to several (the session's 16/48/256 KiB)
HEADS = 6000  # enough that the copy takes seconds on this machine (measured ~1,000-2,000 heads a second)


class Schema4:
    """Writes schema-4 heads (a ``files`` row and its own block list) for content stored once through the Store."""

    def __init__(self, cql, tmp: Path) -> None:
        self.cql = cql
        self.contents: dict[str, bytes] = {}
        self._heads: dict[bytes, tuple] = {}
        with Store(cql) as store:
            for size in SIZES:
                data = os.urandom(size)
                put(store, f"source/{size}", data)
                head = cql.execute(f"SELECT * FROM {META_KS}.versions WHERE id = %s LIMIT 1", (f"source/{size}",)).one()
                # As the list and hash read today (a one-block file's list is its row's lone_block since schema 6,
                # its hash that block's since 7): schema 4 wrote every list and hash out, and write() does.
                blocks = block_list.read(cql, Statements.for_session(cql), head)
                self._heads[data] = (head, blocks)
        for ddl in SCHEMA_4_FILES:
            cql.execute(ddl)
        cql.cluster.control_connection.wait_for_schema_agreement()
        self._insert_head = cql.prepare(INSERT_HEAD)
        self._insert_block = cql.prepare(INSERT_BLOCK)
        _truncate_current(cql)  # the blocks and block lists stay: the heads move to `files`

    def write(self, ids: list[str]) -> None:
        """A head for each ID, of the stored contents in turn."""
        heads, blocks = [], []
        sources = list(self._heads.items())
        for i, file_id in enumerate(ids):
            data, (head, block_rows) = sources[i % len(sources)]
            heads.append((file_id, head.version, head.size, block_list.file_hash_of(head), head.blocks,
                          head.committed_at, None, None, None, None, None))
            blocks += [(file_id, head.version, b.offset, b.hash, b.size) for b in block_rows]
            self.contents[file_id] = data
        for statement, rows in ((self._insert_block, blocks), (self._insert_head, heads)):  # list first, as a store
            execute_concurrent_with_args(self.cql, statement, rows, concurrency=64, raise_on_first_error=True)


def _truncate_current(cql) -> None:
    for table in ("versions", "dir_entries", "directories"):
        cql.execute(f"TRUNCATE {META_KS}.{table}")


@pytest.fixture()
def schema_4(empty_store, tmp_path: Path) -> Iterator[Schema4]:
    """The session store made a schema-4 store (no heads yet); the current schema and emptied again afterwards."""
    original = _settings_rows(empty_store)
    try:
        made = Schema4(empty_store, tmp_path)
        _put_back(empty_store, {**{k: v for k, v in original.items() if k != "directory_rows"},
                                "schema_version": "4"})
        yield made
    finally:
        empty_store.execute(f"DROP TABLE IF EXISTS {META_KS}.files")
        empty_store.cluster.control_connection.wait_for_schema_agreement()
        _put_back(empty_store, original)
        _truncate_all(empty_store)
    assert read_settings(empty_store) == SESSION_SETTINGS


def _copied(cql) -> int:
    return cql.execute(f"SELECT COUNT(*) FROM {META_KS}.versions").one()[0]


def _init(**env: str) -> subprocess.Popen:
    return subprocess.Popen([*CASSTOR, "init"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **SHORT_LEASE, **env})


def _all_restore_and_list(contents: dict[str, bytes], tmp_path: Path, prefix: str = "") -> None:
    """Every file of ``contents`` restores byte-exact (a tree restore) and ``casstor ls`` lists each once."""
    listed = run_casstor("ls", prefix, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [f["id"] for f in json.loads(listed.stdout)] == sorted(contents)
    out = tmp_path / "restored"
    restored = run_casstor("restore", prefix or "/", str(out), "--quiet") if prefix else None
    assert restored is None or restored.returncode == 0, restored.stderr
    for file_id, data in contents.items():
        assert (out / file_id[len(prefix):]).read_bytes() == data, file_id


def test_an_upgrade_killed_midway_is_refused_then_completed_by_a_rerun(schema_4, tmp_path: Path) -> None:
    """Injects SIGKILL into `casstor init` upgrading a schema-4 store of 6,000 heads, once some but not all heads
    are copied (polled: rows in `versions`). Checks the store still reads as schema 4 (`casstor ls` refuses it with
    one line "run 'casstor init'", exit 9), the killed init's window still stops schema-4 writers (a WriterLease is
    refused), a re-run resumes that window once its heartbeat lapsed and completes the upgrade, and then `casstor
    ls` lists every file once and a tree restore writes every one byte-exact."""
    ids = [f"up/d{i % 7}/f{i:05d}.bin" for i in range(HEADS)]
    schema_4.write(ids)
    cql = schema_4.cql
    init = _init()
    try:
        deadline, copied = time.monotonic() + 120, 0
        while not 0 < copied < HEADS and init.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            copied = _copied(cql)
        assert init.poll() is None, f"the copy finished before it could be killed: {init.communicate()}"
        init.send_signal(signal.SIGKILL)
        init.wait()
    finally:
        if init.poll() is None:
            init.kill()
    assert 0 < _copied(cql) < HEADS
    refused = run_casstor("ls", "up/")
    assert refused.returncode == EXIT_NOT_INITIALISED, refused.stderr
    assert refused.stderr.decode().splitlines() == [
        f"casstor: the store has schema 4: run 'casstor init' to upgrade it to schema {SCHEMA_VERSION} (adds "
        "columns; stored blocks stay as they are)"]
    with pytest.raises(MaintenanceError, match="writes are refused during the offline reclaim window held by upgrade@"):
        with WriterLease(cql, "store"):
            pass
    time.sleep(int(SHORT_LEASE["CASSTOR_LEASE_TTL_S"]) + 1)  # the killed holder's heartbeat lapses
    rerun = subprocess.run([*CASSTOR, "init"], capture_output=True, env={**os.environ, **SHORT_LEASE}, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert b"upgrade: resuming the upgrade killed" in rerun.stderr and CURRENT in rerun.stdout
    assert current_window(cql) is None and read_settings(cql).schema_version == SCHEMA_VERSION
    _all_restore_and_list(schema_4.contents, tmp_path, "up/")


def test_an_upgrade_waits_for_running_schema_4_writers_and_stops_new_ones(schema_4, tmp_path: Path) -> None:
    """Injects a schema-4 writer mid-store (its lease held) when `casstor init` starts upgrading, and its commit (a
    head written to `files`) after the upgrade has begun. Checks init waits for that writer (the window is open, in
    state waiting-for-writers, and a new writer is refused), so the head the writer commits before it finishes is
    copied: after init every file, that one included, is listed and restores byte-exact. Without the window the
    copy ran at once and that head was lost to the current schema."""
    schema_4.write([f"w/a{i}.bin" for i in range(50)])
    cql = schema_4.cql
    with WriterLease(cql, "store"):
        init = _init()
        deadline = time.monotonic() + 120
        while init.poll() is None and time.monotonic() < deadline:
            window = current_window(cql)
            if window is not None and window.state == WindowState.WAITING_FOR_WRITERS:
                break
            time.sleep(0.1)
        assert active_writers(cql) == 1, (current_window(cql), init.poll())
        with pytest.raises(MaintenanceError, match="writes are refused"):
            with WriterLease(cql, "store"):
                pass
        schema_4.write(["w/late.bin"])  # the running writer commits
    out, err = init.communicate(timeout=300)
    assert init.returncode == 0, err
    # 1: the running writer. 2 when init's first count fell between the refused lease's row written and deleted
    # (WriterLease writes its row, then checks the window): CI saw it once, on a loaded machine.
    assert re.search(rb"upgrade: waiting for [12] running writer\(s\) to finish", err), err
    _all_restore_and_list(schema_4.contents, tmp_path, "w/")


def test_casstor_upgrade_copies_the_heads_with_spark_tasks(schema_4, tmp_path: Path) -> None:
    """The Spark route of the upgrade (`casstor upgrade`, a local[2] master: 8 token slices, one task each) on a
    schema-4 store of 2,000 heads. Checks it exits 0 with the current schema recorded, every head copied once and its
    window closed, `casstor ls` lists every file once and a tree restore writes each byte-exact; a second run
    finds nothing to upgrade."""
    schema_4.write([f"sp/d{i % 5}/f{i:05d}.bin" for i in range(2000)])
    run = run_casstor("upgrade", env={**NO_UI, **SHORT_LEASE}, timeout=900)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    assert b"upgrade: 2000 heads copied by 8 Spark tasks" in run.stderr and CURRENT in run.stdout
    assert _copied(schema_4.cql) == 2000
    assert current_window(schema_4.cql) is None and read_settings(schema_4.cql).schema_version == SCHEMA_VERSION
    _all_restore_and_list(schema_4.contents, tmp_path, "sp/")
    again = run_casstor("upgrade", env=NO_UI, timeout=900)
    assert again.returncode == 0 and b"nothing to upgrade" in again.stdout, again.stderr.decode()[-3000:]
