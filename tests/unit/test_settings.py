"""Store settings and replication arguments: validated before anything connects (no node, no Spark)."""

from __future__ import annotations

import pytest
from pyfastcdc import FastCDC

from casstor_ops.errors import CasstorError
from casstor_ops.store.schema import CHUNK_LIMITS, Replication, StoreSettings


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
