"""Mode bits and mtime: recorded by a store of a path, applied by a restore to a path (API, CLI, Spark)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import time
from pathlib import Path

import pytest
from cassandra.util import uuid_from_time

from casstor_ops.spark.bulk_ingest import ingest
from casstor_ops.spark.bulk_restore import restore_many
from casstor_ops.store.api import Store
from casstor_ops.store.blocks import block_list
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.records import FileAttributes
from casstor_ops.store.schema import init_store

from .support import run_casstor

OLD_MTIME_NS = 1_000_000_000_123_456_789  # 2001-09-09, with nanoseconds a float timestamp would lose
# (mode, mtime_ns or None for "as written"): both would come back 0644 under umask 022 without the fix.
SOURCES = {"private": (0o600, None), "script": (0o755, OLD_MTIME_NS)}


@pytest.fixture()
def store(cql):
    return Store(cql)


@contextlib.contextmanager
def _umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _sources(directory: Path) -> dict[str, Path]:
    """One file per SOURCES entry, with its mode and (if given) mtime."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (mode, mtime_ns) in SOURCES.items():
        path = paths[name] = directory / name
        path.write_bytes(os.urandom(70_000))
        path.chmod(mode)
        if mtime_ns is not None:
            os.utime(path, ns=(mtime_ns, mtime_ns))
    return paths


def _attributes(path: Path) -> FileAttributes:
    return FileAttributes.of(path.stat())


def _assert_same_file(restored: Path, source: Path) -> None:
    assert restored.read_bytes() == source.read_bytes()
    assert _attributes(restored) == _attributes(source)


def test_store_api_round_trips_mode_and_mtime(store, tmp_path):
    """Injects a 0600 file and a 0755 file with an old mtime, stored by path; checks stat shows their mode and
    mtime and a restore (under umask 022) gives both back exactly."""
    with _umask(0o022):
        for name, source in _sources(tmp_path / "src").items():
            store.put(source, f"attrs/api/{name}")
            assert store.stat(f"attrs/api/{name}").attributes == _attributes(source)
            store.restore(f"attrs/api/{name}", tmp_path / name)
            _assert_same_file(tmp_path / name, source)
    assert stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o600
    assert (tmp_path / "script").stat().st_mtime_ns == OLD_MTIME_NS


def test_stream_records_nothing_and_restores_with_the_umask(store, tmp_path):
    """Injects a store from an in-memory reader over a head that had attributes; checks none are recorded (not
    the previous version's) and the restore gets 0666 less the umask."""
    source = _sources(tmp_path / "src")["private"]
    store.put(source, "attrs/stream")
    store.put(io.BytesIO(source.read_bytes()), "attrs/stream")
    assert store.stat("attrs/stream").attributes is None
    with _umask(0o027):
        store.restore("attrs/stream", tmp_path / "out")
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o640


def test_cli_round_trips_mode_and_mtime(cql, tmp_path):
    """Injects the same two files through 'casstor store PATH' and one through stdin; checks 'stat --json' shows
    mode and mtime_ns (null for stdin) and 'casstor restore' gives both back."""
    for name, source in _sources(tmp_path / "src").items():
        assert run_casstor("store", str(source), f"attrs/cli/{name}", "--quiet").returncode == 0
        shown = json.loads(run_casstor("stat", f"attrs/cli/{name}", "--json").stdout)
        assert (shown["mode"], shown["mtime_ns"]) == (f"{SOURCES[name][0]:04o}", source.stat().st_mtime_ns)
        restored = run_casstor("restore", f"attrs/cli/{name}", str(tmp_path / name), "--quiet")
        assert restored.returncode == 0, restored.stderr
        _assert_same_file(tmp_path / name, source)
    piped = run_casstor("store", "-", "attrs/cli/stdin", "--quiet", input=b"from a pipe")
    assert piped.returncode == 0
    shown = json.loads(run_casstor("stat", "attrs/cli/stdin", "--json").stdout)
    assert (shown["mode"], shown["mtime_ns"]) == (None, None)


def test_the_upgrade_from_schema_4_keeps_attributes_only_when_written_with_the_head(store, cql, tmp_path):
    """Injects a schema-4 store: a ``files`` table with two heads naming a stored file's block lists, one written
    with its mode and mtime, one rewritten the way a casstor without those columns writes it (its INSERT leaves
    the previous version's cells), and schema_version 4; checks the upgrade gives the first its attributes and
    the second none (not the previous version's), and both restore byte-exact."""
    source = _sources(tmp_path / "src")["private"]
    store.put(source, "attrs/v4/source")
    head = store.stat("attrs/v4/source")
    cql.execute(SCHEMA_4_FILES)
    with_attributes = cql.prepare(f"INSERT INTO {META_KS}.files (id, version, size, hash, blocks, committed_at, "
                                  f"mode, mtime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    without = cql.prepare(f"INSERT INTO {META_KS}.files (id, version, size, hash, blocks, committed_at) "
                          f"VALUES (?, ?, ?, ?, ?, ?)")
    try:
        kept, rewritten = (_copy_block_list(cql, head, f"attrs/v4/{name}") for name in ("kept", "rewritten"))
        attributes = (head.attributes.mode, head.attributes.mtime_ns)
        cql.execute(with_attributes, (*_head_values(head, kept), *attributes))
        cql.execute(with_attributes, (*_head_values(head, rewritten), *attributes))
        cql.execute(without, _head_values(head, _copy_block_list(cql, head, rewritten[0])))
        cql.execute(Statements.for_session(cql).write_setting, ("schema_version", "4"))
        init_store(cql)
    finally:  # whatever happened, the store the other tests use is a store of the current schema again
        cql.execute(f"DROP TABLE IF EXISTS {META_KS}.files")
        init_store(cql)
    assert store.stat("attrs/v4/kept").attributes == head.attributes
    assert store.stat("attrs/v4/rewritten").attributes is None
    for name in ("kept", "rewritten"):
        store.restore(f"attrs/v4/{name}", tmp_path / name)
        assert (tmp_path / name).read_bytes() == source.read_bytes()


# Schema 4's head table, as its casstor made it (later schemas have none).
SCHEMA_4_FILES = (f"CREATE TABLE IF NOT EXISTS {META_KS}.files (id text PRIMARY KEY, version timeuuid, size bigint, "
                  f"hash blob, blocks int, committed_at timestamp, mode int, mtime_ns bigint, content blob, "
                  f"codec text, stored_size int)")


def _copy_block_list(cql, head, file_id: str) -> tuple:
    """``head``'s block list written out under ``file_id`` and a new version, as schema 4 kept every list (a
    one-block head's is its row's ``lone_block`` since schema 6: 70 KB of random bytes is one block ~13 % of the
    time): ``(file_id, version)``."""
    version = uuid_from_time(time.time())
    st = Statements.for_session(cql)
    for offset, digest, size in block_list.read(cql, st, head):
        cql.execute(st.insert_file_block, (file_id, version, offset, digest, size))
    return file_id, version


def _head_values(head, key: tuple) -> tuple:
    """The schema-4 head of ``key`` (id, version) for ``head``'s content."""
    return (*key, head.size, head.hash, head.blocks, head.committed_at)


def test_bulk_ingest_and_restore_keep_mode_and_mtime(spark, store, tmp_path):
    """Injects the two files into a Spark bulk ingest and restore, then a chmod alone; checks both come back
    with their mode and mtime, and a re-ingest stores the chmodded file again instead of skipping it."""
    sources = _sources(tmp_path / "src")
    rows = {r.id: r.status for r in ingest(spark, tmp_path / "src", prefix="attrs/bulk/").collect()}
    assert rows == {"attrs/bulk/private": "stored", "attrs/bulk/script": "stored"}
    restored = restore_many(spark, "attrs/bulk/", tmp_path / "out").collect()
    assert {r.status for r in restored} == {"restored"}
    for name, source in sources.items():
        _assert_same_file(tmp_path / "out" / "attrs" / "bulk" / name, source)
    sources["private"].chmod(0o640)
    rows = {r.id: r.status for r in ingest(spark, tmp_path / "src", prefix="attrs/bulk/").collect()}
    assert rows == {"attrs/bulk/private": "stored", "attrs/bulk/script": "skipped"}
    assert store.stat("attrs/bulk/private").attributes.mode == 0o640
