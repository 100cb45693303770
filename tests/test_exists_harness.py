"""casstor_ops.lab.exists_harness: existence checks per block through the driver, on the real test node."""

from __future__ import annotations

import os

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.lab.exists_harness import blocks_per_s_ratio, exists_study, loaded_keys, measure_exists
from casstor_ops.lab.stress import STRESS_KS, run_stress

KEYS = 400


@pytest.fixture(scope="module")
def keys(cql, tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    run_stress("existing_blocks.yaml", "insert", population=KEYS, n=KEYS, threads=[4],
               results_dir=tmp_path_factory.mktemp("harness-load"))
    found = loaded_keys(cql, "existing_blocks", limit=KEYS)
    assert len(found) == len(set(found)) >= KEYS  # earlier tests may have loaded more seeds
    return found


def test_in_five_with_distinct_keys_returns_five_rows(cql, keys: list[bytes]) -> None:
    statement = cql.prepare(f"SELECT hash FROM {STRESS_KS}.existing_blocks WHERE hash IN (?, ?, ?, ?, ?) LIMIT 5")
    assert sorted(r.hash for r in cql.execute(statement, keys[:5])) == sorted(keys[:5])

    five = measure_exists(cql, "exists_five", keys, concurrency=4, checks=500)
    assert (five.queries, five.blocks_checked, five.blocks_found) == (100, 500, 500)


def test_missing_blocks_are_not_found(cql, keys: list[bytes]) -> None:
    absent = [os.urandom(32) for _ in range(50)]
    for query in ("exists_one", "exists_five", "exists_count"):
        result = measure_exists(cql, query, absent, concurrency=2, checks=50)
        assert (result.blocks_checked, result.blocks_found) == (50, 0), query


def test_study_reports_blocks_per_second(cql, keys: list[bytes]) -> None:
    study = exists_study(cql, keys, queries=["exists_one", "exists_five", "exists_count"], concurrencies=[1, 4],
                         checks=400)
    assert len(study) == 6
    assert (study.blocks_found == study.blocks_checked).all()
    assert (study.blocks_per_s > 0).all() and (study.queries_per_s > 0).all()
    assert ((study.median_ms > 0) & (study.median_ms <= study.p95_ms) & (study.p95_ms <= study.p99_ms)).all()
    five = study[study["query"] == "exists_five"]
    assert list(five.blocks_per_s) == pytest.approx(list(five.queries_per_s * 5))
    assert blocks_per_s_ratio(study, 4) > 0
    with pytest.raises(CasstorError, match="no exists_five and exists_one measured at concurrency 8"):
        blocks_per_s_ratio(study, 8)


def test_bad_requests_are_one_line_errors(cql, keys: list[bytes]) -> None:
    with pytest.raises(CasstorError, match="query 'exists_all' is not one of"):
        measure_exists(cql, "exists_all", keys, concurrency=1, checks=10)
    with pytest.raises(CasstorError, match="table 'files' is not one of"):
        measure_exists(cql, "exists_one", keys, concurrency=1, checks=10, table="files")
    with pytest.raises(CasstorError, match="needs at least 5 loaded keys, got 3"):
        measure_exists(cql, "exists_five", keys[:3], concurrency=1, checks=10)
