"""casstor_ops.lab.stress against the real test node with the real cassandra-stress."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from casstor_ops.cluster.connection import Endpoint
from casstor_ops.errors import CasstorError
from casstor_ops.lab.stress import (PROFILE_DIR, PROFILES, STRESS_KS, drop_stress_keyspace, flush_local, row_cache_enabled,
                                run_stress, set_row_cache)
from casstor_ops.store.cql.keyspaces import DATA_KS

KEYS = 600
QUERIES = {"exists_one": 1, "exists_five": 1, "exists_count": 1}


@pytest.fixture(scope="module")
def loads(cql, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every profile's table, freshly loaded with KEYS keys (seeds 1..KEYS) and flushed."""
    results = tmp_path_factory.mktemp("stress-results")
    drop_stress_keyspace(cql)
    loaded = {profile: run_stress(profile, "insert", population=KEYS, n=KEYS, threads=[4], results_dir=results)
              for profile in PROFILES}
    assert flush_local()
    return loaded


def _assert_sane(row) -> None:
    assert row.op_rate > 0 and row.seconds > 0
    assert 0 < row.median_ms <= row.p95_ms <= row.p99_ms <= row.p999_ms <= row.max_ms
    assert row.mean_ms > 0 and row.errors == 0


def test_inserts_write_every_key_once(loads: dict) -> None:
    for profile, result in loads.items():
        total = result.totals.iloc[0]
        assert (result.table, result.ops, total.threads) == (PROFILES[profile], "insert", 4)
        assert total.partitions == KEYS
        _assert_sane(total)
        assert len(result.intervals) >= 1 and result.logs[0].read_text().count("Results:") == 1
        assert result.logs[0].with_suffix(".hdr").stat().st_size > 0  # -log hdrfile= works (jaxb-api present)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_exists_queries_hit_loaded_keys_and_exists_five_reads_one_row(loads: dict, profile: str,
                                                                       tmp_path: Path) -> None:
    threads = [2, 4] if profile == "existing_blocks.yaml" else [4]
    result = run_stress(profile, QUERIES, population=KEYS, n=1500, threads=threads, results_dir=tmp_path)

    assert sorted(result.totals.threads) == threads and len(result.logs) == len(threads)
    assert (tmp_path / f"{Path(profile).stem}-exists_one+exists_five+exists_count" / "summary.csv").exists()
    per_op = result.summary[result.summary.op != "total"]
    assert set(per_op.op) == set(QUERIES) and len(per_op) == 3 * len(threads)
    for row in per_op.itertuples():
        _assert_sane(row)
        rows_per_query = row.row_rate / row.op_rate
        # Every read draws a loaded seed: one row per exists_one; count(*) always answers one row;
        # exists_five also answers ONE row: cassandra-stress binds one key to all five markers.
        assert rows_per_query == pytest.approx(1.0, abs=0.1), (row.op, rows_per_query)
    assert set(result.intervals.op) >= {"total", *QUERIES}


def test_reads_hit_only_the_loaded_range(loads: dict, tmp_path: Path) -> None:
    # Drawing seeds from 1..10N when 1..N were loaded: ~90% of the lookups miss.
    wide = run_stress("existing_blocks.yaml", "exists_one", population=KEYS * 10, n=600, threads=[4],
                      results_dir=tmp_path, warmup=False)
    total = wide.totals.iloc[0]
    assert 0 < total.row_rate / total.op_rate < 0.3
    command = wide.logs[0].with_suffix(".cmd").read_text()
    assert f"-pop dist=uniform(1..{KEYS * 10})" in command and "cl=QUORUM" in command and "no-warmup" in command


def test_a_relative_results_dir_works_from_any_directory(loads: dict, tmp_path: Path, monkeypatch) -> None:
    """Injects a relative ``results_dir`` (as notebook 03 passes ``plots/``) from a working directory that is not
    cassandra-stress's; checks the run completes and its HDR file lands under that directory (it failed with
    'No such file or directory' for the .hdr)."""
    monkeypatch.chdir(tmp_path)
    result = run_stress("existing_blocks.yaml", "exists_one", population=KEYS, n=200, threads=[4],
                        results_dir="relative-results", name="relative", warmup=False)
    assert result.logs[0] == tmp_path / "relative-results" / "relative" / "t4.log"
    assert result.logs[0].with_suffix(".hdr").stat().st_size > 0


def test_profiles_copy_the_store_schema(loads: dict, cql) -> None:
    # cassandra-stress made these tables from another process; the driver learns of that by pushed events it
    # debounces, so its metadata may still lack them (CI once saw KeyError: 'blocks'): read it afresh.
    cql.cluster.refresh_schema_metadata()
    meta = cql.cluster.metadata.keyspaces
    for table in ("blocks", "existing_blocks"):
        real, copy = meta[DATA_KS].tables[table], meta[STRESS_KS].tables[table]
        assert [(c.name, c.cql_type) for c in copy.columns.values()] == \
            [(c.name, c.cql_type) for c in real.columns.values()]
        assert [c.name for c in copy.partition_key] == [c.name for c in real.partition_key] == ["hash"]
    key_only = meta[STRESS_KS].tables["existing_blocks_key_only"]
    assert [(c.name, c.cql_type) for c in key_only.columns.values()] == [("hash", "blob")]
    hashes = [r.hash for r in cql.execute(f"SELECT hash FROM {STRESS_KS}.existing_blocks LIMIT 50")]
    assert len(hashes) == 50 and {len(h) for h in hashes} == {32}  # the store's key format: 32-byte digests
    sizes = [r.size for r in cql.execute(f"SELECT size FROM {STRESS_KS}.blocks LIMIT 200")]
    assert all(8192 <= s <= 262200 for s in sizes)  # population, not the ignored size:, sets an int
    lengths = [len(r.content) for r in cql.execute(f"SELECT content FROM {STRESS_KS}.blocks LIMIT 200")]
    assert all(16384 <= n <= 262144 for n in lengths) and 40_000 < sum(lengths) / len(lengths) < 58_000


def test_row_cache_switch(loads: dict, cql) -> None:
    set_row_cache(cql, "existing_blocks", True)
    assert row_cache_enabled(cql, "existing_blocks")
    set_row_cache(cql, "existing_blocks", False)
    assert not row_cache_enabled(cql, "existing_blocks")
    for keyspace, table in [("casstor_meta", "files"), (STRESS_KS, "existing_blocks WITH gc_grace_seconds = 0")]:
        with pytest.raises(CasstorError, match="is not one of"):
            set_row_cache(cql, table, True, keyspace=keyspace)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_failing_runs_raise_one_line_errors(loads: dict, tmp_path: Path) -> None:
    nowhere = Endpoint(("127.0.0.1",), _free_port(), embedded=False)
    with pytest.raises(CasstorError) as unreachable:
        run_stress("existing_blocks.yaml", "exists_one", population=KEYS, n=100, endpoint=nowhere,
                   results_dir=tmp_path)
    message = str(unreachable.value)
    assert "\n" not in message and "cassandra-stress failed (exit 1)" in message and "Cannot connect" in message
    assert f"see {tmp_path}" in message

    bad = tmp_path / "bad.yaml"
    bad.write_text((PROFILE_DIR / "existing_blocks.yaml").read_text()
                   .replace("SELECT hash FROM existing_blocks WHERE hash = ?", "SELECT nosuch FROM existing_blocks WHERE hash = ?"))
    with pytest.raises(CasstorError, match=r"^cassandra-stress failed \(exit 1\): Undefined column name nosuch") as err:
        run_stress(bad, "exists_one", population=KEYS, n=100, results_dir=tmp_path, warmup=False)
    assert "\n" not in str(err.value)

    with pytest.raises(CasstorError, match="stress profile 'nope.yaml' not found"):
        run_stress("nope.yaml", "exists_one", population=KEYS, n=100)
    with pytest.raises(CasstorError, match="exactly one of n"):
        run_stress("existing_blocks.yaml", "exists_one", population=KEYS, results_dir=tmp_path)
    with pytest.raises(CasstorError, match="expected a query name"):
        run_stress("existing_blocks.yaml", {"exists_one); DROP": 1}, population=KEYS, n=10)
