"""``casstor init`` and the schema module against the real test node."""

from __future__ import annotations

from dataclasses import replace

import pytest

from casstor_ops.errors import EXIT_NOT_INITIALISED, CasstorError
from casstor_ops.store.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import (DEFAULT_COMMIT_BOUND_S, Replication, StoreSettings, commit_bound_s, init_store,
                                      read_settings, set_commit_bound)

from .support import SESSION_SETTINGS, run_casstor


def test_init_is_idempotent_and_records_settings(cql) -> None:
    first = init_store(cql)
    again = init_store(cql)
    assert first == again == SESSION_SETTINGS
    assert read_settings(cql).hash == "blake2b-256"
    tables = set(cql.cluster.metadata.keyspaces[DATA_KS].tables) | set(cql.cluster.metadata.keyspaces[META_KS].tables)
    assert {"blocks", "existing_blocks", "files", "file_blocks", "settings", "maintenance",
            "writer_leases"} <= tables


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
    set_commit_bound(cql, DEFAULT_COMMIT_BOUND_S)
    with pytest.raises(CasstorError):
        set_commit_bound(cql, 0)


def test_inconsistent_chunk_sizes_are_refused_before_connecting() -> None:
    out = run_casstor("init", "--chunk-min", "65536", "--chunk-avg", "16384", env={"CASSTOR_NODES": "127.0.0.1:1"})
    assert out.returncode == 1
    assert out.stderr.decode().splitlines() == [
        "casstor: chunk sizes min 65536 / avg 16384 / max 1048576: need min <= avg <= max"]


@pytest.mark.parametrize("damage", [f"DROP TABLE {META_KS}.settings", f"TRUNCATE {META_KS}.settings"],
                         ids=["no settings table", "empty settings table"])
def test_missing_settings_are_not_initialised(cql, damage) -> None:
    """Injects a casstor_meta keyspace without the settings table, then an empty settings table; checks
    read_settings finds no store and 'casstor ls' says 'not initialised' in one line with EXIT_NOT_INITIALISED."""
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
