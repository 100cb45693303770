"""The shared part of bulk ingest and restore, without Cassandra or Spark: bin-packing and result rows."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import DriverException
from pyspark.sql import types as T

from casstor_ops.errors import CasstorError, CorruptionError
from casstor_ops.spark.bulk_ingest import INGEST_SCHEMA
from casstor_ops.spark.bulk_restore import RESTORE_SCHEMA
from casstor_ops.spark.bulk_tasks import BulkJob, pack_by_size, result_row, result_schema


def sizes(bins: list[list[int]]) -> list[int]:
    return [sum(b) for b in bins]


def test_pack_by_size_spreads_big_files() -> None:
    items = [100, 90, 80, 5, 4, 3, 2, 1, 1, 1]
    bins = pack_by_size(items, 3, size=lambda s: s)
    assert sorted(x for b in bins for x in b) == sorted(items)  # every item exactly once
    assert sorted(max(b) for b in bins) == [80, 90, 100]  # one big file per task
    assert max(sizes(bins)) == 100  # optimal here: no task waits on more than the biggest file


def test_pack_by_size_balances_equal_items() -> None:
    bins = pack_by_size([10] * 12, 4, size=lambda s: s)
    assert sizes(bins) == [30, 30, 30, 30]


def test_pack_by_size_keeps_every_object_once() -> None:
    items = [("a", 5), ("b", 5), ("c", -1), ("d", 0), ("e", 7)]  # -1: a size unknown at listing time
    bins = pack_by_size(items, 2, size=lambda item: item[1])
    packed = [item for b in bins for item in b]
    assert sorted(packed) == sorted(items) and len(packed) == len(items)


def test_pack_by_size_with_more_bins_than_items_or_none() -> None:
    assert pack_by_size([7], 4, size=lambda s: s) == [[7]]
    assert sorted(pack_by_size([3, 2], 5, size=lambda s: s)) == [[2], [3]]  # no empty bins
    assert pack_by_size([], 3, size=lambda s: s) == []
    assert pack_by_size([1, 2], 0, size=lambda s: s) == [[2, 1]]  # at least one bin


def test_result_schemas_share_the_common_columns() -> None:
    common = ["id", "path", "bytes", "blocks", "seconds", "status", "error"]
    assert RESTORE_SCHEMA.fieldNames() == common
    assert INGEST_SCHEMA.fieldNames() == common[:4] + ["new_blocks", "new_bytes", "new_stored_bytes"] + common[4:]
    assert result_schema().fieldNames() == common


def job(work) -> BulkJob[tuple[str, int]]:
    extra = T.StructField("new_bytes", T.LongType(), False)
    return BulkJob("test", result_schema(extra), size=lambda item: item[1],
                   describe=lambda item: dict(id=item[0], path=f"/src/{item[0]}", bytes=item[1]), work=work)


def test_a_working_item_gets_its_status_and_numbers() -> None:
    def work(store: Any, item: tuple[str, int], row: dict[str, Any], scope: Any) -> None:
        row.update(blocks=3, new_bytes=item[1], status="stored")

    row, error = result_row(job(work), None, ("a", 10))
    assert error is None
    assert row == dict(id="a", path="/src/a", bytes=10, blocks=3, new_bytes=10, seconds=row["seconds"],
                       status="stored", error=None)
    assert row["seconds"] >= 0


@pytest.mark.parametrize("error, status, message", [
    (PermissionError(13, "Permission denied", "/src/a"), "failed", "Permission denied"),
    (CasstorError("the store refused it"), "failed", "the store refused it"),
    (DriverException("Operation timed out\n  for   casstor_meta.files"), "failed",
     "Operation timed out for casstor_meta.files"),
    (CorruptionError("block 00ff missing"), "corrupt", "block 00ff missing"),
])
def test_a_failing_item_gets_a_failed_row_with_a_one_line_error(error: Exception, status: str,
                                                                  message: str) -> None:
    def work(store: Any, item: tuple[str, int], row: dict[str, Any], scope: Any) -> None:
        row["blocks"] = 1
        raise error

    row, caught = result_row(job(work), None, ("a", 10))
    assert caught is error
    assert (row["id"], row["path"], row["status"], row["error"]) == ("a", "/src/a", status, message)
    assert "\n" not in row["error"]
    assert row["new_bytes"] == 0


def test_a_bug_is_not_a_failed_file() -> None:
    def work(store: Any, item: tuple[str, int], row: dict[str, Any], scope: Any) -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        result_row(job(work), None, ("a", 10))
