"""Named rows with one class per column list: the driver's rows, without a new class per result."""

from __future__ import annotations

from cassandra.query import named_tuple_factory

from casstor_ops.cluster.row_types import named_rows


def test_rows_equal_the_drivers_and_share_one_class_per_column_list() -> None:
    columns = ["id", "version", "head_written"]
    rows = [("a", 1, 10), ("b", 2, 20)]
    ours, drivers = named_rows(columns, rows), named_tuple_factory(columns, rows)
    assert ours == drivers and ours[1].head_written == drivers[1].head_written == 20
    assert type(named_rows(list(columns), [("c", 3, 30)])[0]) is type(ours[0])
    assert type(named_rows(["id"], [("a",)])[0]) is not type(ours[0])


def test_column_names_are_cleaned_as_the_driver_cleans_them() -> None:
    columns = ["[applied]", "count(*)", "writetime(version)"]
    ours, drivers = named_rows(columns, [(True, 3, 7)])[0], named_tuple_factory(columns, [(True, 3, 7)])[0]
    assert ours._fields == drivers._fields and ours == drivers
