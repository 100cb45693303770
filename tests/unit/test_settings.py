"""Store settings and replication arguments: validated before anything connects (no node, no Spark); the settings
rows an init writes, checked before it writes any."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyfastcdc import FastCDC

from casstor_ops.errors import CasstorError
from casstor_ops.store.schema import CHUNK_LIMITS, SCHEMA_VERSION, Replication, StoreSettings, rows_to_record


def _chunker_accepts(settings: StoreSettings) -> bool:
    try:
        FastCDC(avg_size=settings.chunk_avg, min_size=settings.chunk_min, max_size=settings.chunk_max,
                normalized_chunking=settings.normalized_chunking)
    except ValueError:
        return False
    return True


def test_defaults_are_accepted_by_the_chunker() -> None:
    assert _chunker_accepts(StoreSettings())


@pytest.mark.parametrize("field", sorted(CHUNK_LIMITS))
@pytest.mark.parametrize("edge", ["low", "high"])
def test_each_chunk_limit_is_the_chunkers_own(field: str, edge: str) -> None:
    """Injects each size just inside and just outside the limit; checks that init refuses exactly what the
    chunker would refuse at the first store (where it was a ValueError traceback)."""
    low, high = CHUNK_LIMITS[field]
    inside, outside = (low, low - 1) if edge == "low" else (high, high + 1)
    others = {"chunk_min": 64, "chunk_avg": 4 << 20, "chunk_max": 16 << 20} if edge == "high" else \
        {"chunk_min": 64, "chunk_avg": 256, "chunk_max": 1024}
    accepted = StoreSettings(**{**others, field: inside})
    assert _chunker_accepts(accepted)
    with pytest.raises(CasstorError, match=field.replace("_", " ")):
        StoreSettings(**{**others, field: outside})


def test_sizes_out_of_order_are_refused_in_one_line() -> None:
    with pytest.raises(CasstorError) as err:
        StoreSettings(chunk_min=65536, chunk_avg=16384)
    assert str(err.value) == "chunk sizes min 65536 / avg 16384 / max 1048576: need min <= avg <= max"


def test_settings_round_trip_through_their_rows() -> None:
    settings = StoreSettings(chunk_min=4096, chunk_avg=16384, chunk_max=65536)
    assert StoreSettings.from_rows(settings.as_rows()) == settings


# A store made before the chunk sizes changed and before inline files: schema 3, 16/48/256 KiB, no inline_max row.
OLD = StoreSettings(chunk_min=16384, chunk_avg=49152, chunk_max=262144, compression="zstd:3")
SCHEMA_3 = {**{k: v for k, v in OLD.as_rows().items() if k != "inline_max"}, "schema_version": "3",
            "commit_bound_s": "300"}


def test_a_new_store_records_every_setting_and_its_schema_version_last() -> None:
    writes = rows_to_record({}, StoreSettings())
    assert writes == StoreSettings().as_rows() and list(writes)[-1] == "schema_version"


def test_an_upgrade_records_what_is_missing_then_the_new_version() -> None:
    assert list(rows_to_record(SCHEMA_3, OLD).items()) == [("inline_max", "0"),
                                                             ("schema_version", str(SCHEMA_VERSION))]
    asked = replace(OLD, inline_max=16384, compression="none")  # an existing store keeps its compression
    assert list(rows_to_record(SCHEMA_3, asked).items()) == [("inline_max", "16384"),
                                                               ("schema_version", str(SCHEMA_VERSION))]
    schema_2 = {k: v for k, v in SCHEMA_3.items() if k != "compression"} | {"schema_version": "2"}
    assert "compression" not in rows_to_record(schema_2, OLD)  # absent reads as none, as before the upgrade


def test_an_upgrade_cut_short_is_completed_by_a_rerun() -> None:
    """Injects the rows of an upgrade stopped before its last write (inline_max recorded, schema_version still
    3); checks a re-run asking the same writes only the version, and a complete store needs nothing."""
    cut_short = {**SCHEMA_3, "inline_max": "16384"}
    asked = replace(OLD, inline_max=16384)
    assert rows_to_record(cut_short, asked) == {"schema_version": str(SCHEMA_VERSION)}
    assert rows_to_record({**cut_short, "schema_version": str(SCHEMA_VERSION)}, asked) == {}


def test_an_inline_max_above_the_old_chunk_minimum_is_refused_before_any_write() -> None:
    """Injects `casstor init --inline-max 65536` (the README's) against a schema-3 store of 16 KiB minimum: it
    asked the new default chunk sizes too. Checks one line naming each recorded setting that differs, raised
    by the plan (init_store writes nothing before it), not by reading the store back afterwards."""
    with pytest.raises(CasstorError) as refused:
        rows_to_record(SCHEMA_3, StoreSettings(inline_max=65536))
    assert str(refused.value) == (
        "the store is already initialised with chunk_min=16384 (asked 65536), chunk_avg=49152 (asked 196608), "
        "chunk_max=262144 (asked 1048576); refusing to change it (blocks chunked or hashed differently would "
        "never deduplicate)")
    with pytest.raises(CasstorError, match=r"inline_max=0 \(asked 16384\)"):  # fixed once recorded
        rows_to_record({**SCHEMA_3, "inline_max": "0", "schema_version": "4"}, replace(OLD, inline_max=16384))


@pytest.mark.parametrize("spec, factors", [
    ("dc1:3", (("dc1", 3),)),
    ("MAINDC:3, BACKUP-DC:1", (("MAINDC", 3), ("BACKUP-DC", 1))),
])
def test_data_centre_replication_parses(spec: str, factors: tuple) -> None:
    replication = Replication.parse_dcs(spec)
    assert replication.strategy == "NetworkTopologyStrategy" and replication.factors == factors


@pytest.mark.parametrize("spec", ["dc1", "dc1:0", "dc1:x", "dc 1:3", "dc1:3,", "dc1:3;DROP", "'dc':3"])
def test_bad_data_centre_replication_is_refused(spec: str) -> None:
    """Injects malformed or hostile DC:RF specs; checks each is refused before it can reach DDL."""
    with pytest.raises(CasstorError, match="expected DC:RF"):
        Replication.parse_dcs(spec)


def test_simple_replication_needs_one_replica() -> None:
    assert Replication.simple(3).cql() == "{'class': 'SimpleStrategy', 'replication_factor': '3'}"
    with pytest.raises(CasstorError, match="at least 1"):
        Replication.simple(0)
