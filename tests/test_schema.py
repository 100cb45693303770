"""``casstor init`` and the schema module against the real test node."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from casstor_ops.errors import EXIT_NOT_INITIALISED, CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import commit_bound_s, set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.schema import SCHEMA_VERSION, Replication, StoreSettings, init_store, read_settings

from .support import SESSION_SETTINGS, run_casstor


def test_init_is_idempotent_and_records_settings(cql) -> None:
    first = init_store(cql)
    again = init_store(cql)
    assert first == again == SESSION_SETTINGS
    assert read_settings(cql).hash == "blake2b-256"
    tables = set(cql.cluster.metadata.keyspaces[DATA_KS].tables) | set(cql.cluster.metadata.keyspaces[META_KS].tables)
    assert {"blocks", "existing_blocks", "versions", "dir_entries", "directories", "file_blocks", "settings",
            "maintenance", "writer_leases"} <= tables


def test_cli_init_prints_replication_and_settings(cql) -> None:
    """Checks `casstor init` without sizes on a store made with other chunk sizes than today's defaults (the session's
    16/48/256 KiB) keeps them: they are what it prints, and it succeeds."""
    assert StoreSettings().chunk_avg != SESSION_SETTINGS.chunk_avg
    out = run_casstor("init")
    assert out.returncode == 0, out.stderr
    assert b"casstor_data: {'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '1'}" \
        in out.stdout
    assert b"fastcdc-2020 min/avg/max 16384/49152/262144" in out.stdout


def test_conflicting_settings_are_refused(cql) -> None:
    with pytest.raises(CasstorError, match=r"already initialised with chunk_avg=49152 \(asked 65536\)"):
        init_store(cql, settings=replace(SESSION_SETTINGS, chunk_avg=65536))
    assert read_settings(cql).chunk_avg == 49152
    out = run_casstor("init", "--chunk-avg", "196608")  # the new default, given: a conflict, refused in one line
    assert out.returncode == 1 and out.stderr.decode().count("\n") == 1, out.stderr
    assert b"already initialised with chunk_min=16384 (asked 65536), chunk_avg=49152 (asked 196608)" in out.stderr


def test_conflicting_replication_is_one_line_error(cql) -> None:
    out = run_casstor("init", "--data-rf", "3")
    assert out.returncode == 1
    lines = out.stderr.decode().splitlines()
    assert len(lines) == 1 and "refusing to change it to SimpleStrategy(replication_factor=3)" in lines[0]


def test_replication_parsing() -> None:
    nts = Replication.parse_dcs("MAINDC:3,BACKUPDC:1")
    assert nts.cql() == "{'class': 'NetworkTopologyStrategy', 'MAINDC': '3', 'BACKUPDC': '1'}"
    assert nts.as_map() == {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
                            "MAINDC": "3", "BACKUPDC": "1"}
    for bad in ("MAINDC", "MAIN DC:3", "X:0", "X:'1'", "dc1:3; DROP KEYSPACE x"):
        with pytest.raises(CasstorError, match="expected DC:RF"):
            Replication.parse_dcs(bad)
    with pytest.raises(CasstorError, match="at least 1"):
        Replication.simple(0)


def test_bad_cli_usage_is_one_line() -> None:
    out = run_casstor("init", "--data-rf", "1", "--data-dc", "dc1:1")
    assert out.returncode == 2
    assert len(out.stderr.decode().strip().splitlines()) == 1
    out = run_casstor("init", "--data-dc", "dc1", env={"CASSTOR_NODES": "127.0.0.1:1"})
    assert out.returncode == 1 and out.stderr.decode().count("\n") == 1


def test_commit_bound_is_a_tunable(cql) -> None:
    set_commit_bound(cql, 42)
    assert commit_bound_s(cql) == 42
    assert init_store(cql) == SESSION_SETTINGS  # a tunable never conflicts with init
    set_commit_bound(cql, SAFETY.commit_bound_s)
    with pytest.raises(CasstorError):
        set_commit_bound(cql, 0)


def test_inconsistent_chunk_sizes_are_refused_before_connecting() -> None:
    out = run_casstor("init", "--chunk-min", "65536", "--chunk-avg", "16384", env={"CASSTOR_NODES": "127.0.0.1:1"})
    assert out.returncode == 1
    assert out.stderr.decode().splitlines() == [
        "casstor: chunk sizes min 65536 / avg 16384 / max 1048576: need min <= avg <= max"]


@pytest.mark.parametrize("damage", [f"DROP TABLE {META_KS}.settings", f"TRUNCATE {META_KS}.settings",
                                    f"DELETE FROM {META_KS}.settings WHERE name = 'schema_version'"],
                         ids=["no settings table", "empty settings table", "no schema_version"])
def test_missing_settings_are_not_initialised(cql, damage) -> None:
    """Injects a casstor_meta keyspace without the settings table, an empty settings table, and settings without
    the schema_version an init writes last (one that did not finish); checks read_settings finds no store and
    'casstor ls' says 'not initialised' in one line with EXIT_NOT_INITIALISED."""
    cql.execute(damage)
    try:
        assert read_settings(cql) is None
        out = run_casstor("ls")
        assert out.returncode == EXIT_NOT_INITIALISED, out.stderr
        assert out.stderr.decode().splitlines() == ["casstor: the store is not initialised: run 'casstor init'"]
    finally:
        init_store(cql, settings=SESSION_SETTINGS)  # the other tests' store, settings and all
    assert read_settings(cql) == SESSION_SETTINGS


def test_a_new_store_gets_the_default_chunk_sizes(cql) -> None:
    """Injects a store without settings (its settings table emptied, as before a first init); checks `casstor init`
    without sizes records today's defaults (64/192/1024 KiB) and prints them, then puts the session's back."""
    cql.execute(f"TRUNCATE {META_KS}.settings")
    try:
        out = run_casstor("init")
        assert out.returncode == 0, out.stderr
        assert b"fastcdc-2020 min/avg/max 65536/196608/1048576" in out.stdout
        assert read_settings(cql) == StoreSettings()
    finally:
        cql.execute(f"TRUNCATE {META_KS}.settings")
        init_store(cql, settings=SESSION_SETTINGS)
    assert read_settings(cql) == SESSION_SETTINGS


class _Killed(Exception):
    """The injected death of an init."""


def _settings_rows(cql) -> dict[str, str]:
    return {r.name: r.value for r in cql.execute(f"SELECT name, value FROM {META_KS}.settings")}


def _put_back(cql, rows: dict[str, str]) -> None:
    """The settings table holding exactly ``rows`` (the session store's, after a test made it an older one)."""
    cql.execute(f"TRUNCATE {META_KS}.settings")
    for name, value in rows.items():
        cql.execute(Statements.for_session(cql).write_setting, (name, value))


def _as_schema_3(cql) -> dict[str, str]:
    """The session store's settings made those of a schema-3 store (no inline_max row; its 16 KiB chunk minimum
    is that of stores made before the chunk change); the rows it had."""
    rows = _settings_rows(cql)
    _put_back(cql, {**{k: v for k, v in rows.items() if k != "inline_max"}, "schema_version": "3"})
    return rows


def test_a_refused_upgrade_leaves_the_store_as_it_was(cql, tmp_path) -> None:
    """Injects `casstor init --inline-max 65536` (as the README suggests) on a schema-3 store of 16 KiB chunk
    minimum; checks it exits 1 with one line and leaves every settings row as it was, so `casstor ls` still asks
    for an upgrade, a plain `casstor init` upgrades it (the current schema, no inline files), and a file then stores and
    restores. Before the fix the refused init had recorded schema 4 and inline_max 65536 first: every command
    after it failed with "inline max 65536: takes 0 ..."."""
    original = _as_schema_3(cql)
    try:
        old = _settings_rows(cql)
        out = run_casstor("init", "--inline-max", "65536")
        assert out.returncode == 1 and out.stderr.decode().count("\n") == 1, out.stderr
        assert b"already initialised with chunk_min=16384 (asked 65536)" in out.stderr
        assert _settings_rows(cql) == old
        listed = run_casstor("ls")
        assert listed.returncode == EXIT_NOT_INITIALISED and b"has schema 3: run 'casstor init'" in listed.stderr
        out = run_casstor("init")
        upgraded = f"schema v{SCHEMA_VERSION}".encode()
        assert out.returncode == 0 and upgraded in out.stdout and b"no inline files" in out.stdout, out
        data = tmp_path / "a.bin"
        data.write_bytes(os.urandom(100_000))
        assert run_casstor("store", str(data), "upgraded/a.bin", "--quiet").returncode == 0
        assert run_casstor("restore", "upgraded/a.bin", str(tmp_path / "back"), "--quiet").returncode == 0
        assert (tmp_path / "back").read_bytes() == data.read_bytes()
        assert run_casstor("rm", "upgraded/a.bin").returncode == 0
    finally:
        _put_back(cql, original)
    assert read_settings(cql) == SESSION_SETTINGS


def test_an_upgrade_cut_short_is_refused_until_init_completes_it(cql, monkeypatch) -> None:
    """Injects the death of an upgrade of a schema-3 store (asking inline_max 16384) just after its first
    settings write: every later settings write of that init raises. Checks the store still reads as schema 3,
    so a store refuses it ("run 'casstor init'", exit 9) rather than using a half-recorded store, and that a
    plain `casstor init` completes it with the inline_max asked. Before the fix schema_version was written
    first: the store read as schema 4 with no inline_max, and was used."""
    original = _as_schema_3(cql)
    st = Statements.for_session(cql)
    setting_writes = {st.write_setting.query_id, st.record_setting.query_id}
    real_execute, written = cql.execute, []

    def dies_after_one_setting(statement, *args, **kwargs):
        if getattr(statement, "query_id", None) in setting_writes:
            if written:
                raise _Killed("injected: init died")
            written.append(args)
        return real_execute(statement, *args, **kwargs)

    try:
        monkeypatch.setattr(cql, "execute", dies_after_one_setting)
        with pytest.raises(_Killed):
            init_store(cql, settings=replace(SESSION_SETTINGS, inline_max=16384))
        monkeypatch.undo()
        with pytest.raises(CasstorError, match="has schema 3: run 'casstor init' to upgrade") as refused:
            Store(cql)
        assert refused.value.exit_code == EXIT_NOT_INITIALISED
        out = run_casstor("init")
        assert out.returncode == 0, out.stderr
        recorded = read_settings(cql)
        assert (recorded.schema_version, recorded.inline_max) == (SCHEMA_VERSION, 16384)
    finally:
        monkeypatch.undo()
        _put_back(cql, original)
    assert read_settings(cql) == SESSION_SETTINGS
