"""``unlogged_batch`` serializes rows as the driver's own ``BatchStatement.add`` does.

No node: the prepared statements are built from column metadata as the driver builds them from a PREPARE's answer.
What it checks: the same query ids and serialized values, routing key and keyspace, for rows of plain values, rows
with a null or an unset value (a head write in a store without inline files), a short row (padded with unset values),
and a value of the wrong type or an unset routing key (the driver's errors). Rows of plain, null and unset values
after the first take the serialized path, not the driver's ``add``. It fails when the driver's batch layout or
serialization changes under the pinned version.
"""

import pytest
from cassandra.cqltypes import BytesType, Int32Type, LongType, UTF8Type
from cassandra.protocol import ColumnMetadata
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType, PreparedStatement

from casstor_ops.store.cql import request_queue
from casstor_ops.store.cql.request_queue import unlogged_batch


def _prepared(query_id: bytes, columns: list[tuple[str, type]], routing: list[int]) -> PreparedStatement:
    metadata = [ColumnMetadata("ks", "t", name, kind) for name, kind in columns]
    return PreparedStatement(metadata, query_id, routing, "INSERT ...", "ks", 4, [], None)


ENTRY = _prepared(b"entry", [("dir", UTF8Type), ("bucket", Int32Type), ("name", UTF8Type), ("id", BytesType),
                             ("size", LongType)], [0, 1])
BLOCK = _prepared(b"block", [("hash", BytesType), ("size", Int32Type), ("codec", UTF8Type), ("content", BytesType)],
                  [0])


def _drivers(writes):
    batch = BatchStatement(BatchType.UNLOGGED)
    for statement, values in writes:
        batch.add(statement, values)
    return batch


def _same(ours: BatchStatement, drivers: BatchStatement) -> None:
    assert ours._statements_and_parameters == drivers._statements_and_parameters
    assert (ours.routing_key, ours.keyspace, ours.batch_type) == (drivers.routing_key, drivers.keyspace,
                                                                  drivers.batch_type)


def test_rows_of_two_statements_serialize_as_the_drivers():
    writes = [(ENTRY, ("a/b", 3, f"f{i}.py", bytes([i]) * 32, 10 ** 10 + i)) for i in range(5)]
    writes += [(BLOCK, (bytes([i]) * 32, 20_000 + i, None if i % 2 else "zstd", b"x" * i)) for i in range(4)]
    writes.append((ENTRY, ("c", 0, "g", b"", 0)))
    _same(unlogged_batch(writes), _drivers(writes))


def test_unset_values_serialize_as_the_drivers_without_its_add(monkeypatch):
    added = []

    class CountingBatch(BatchStatement):
        def add(self, statement, parameters=None):
            added.append(parameters)
            return super().add(statement, parameters)

    writes = [(BLOCK, (bytes([i]) * 32, i, UNSET_VALUE, UNSET_VALUE if i % 2 else b"c")) for i in range(4)]
    writes.append((ENTRY, ("d", 1, "n", None, UNSET_VALUE)))
    monkeypatch.setattr(request_queue, "BatchStatement", CountingBatch)
    ours = unlogged_batch(writes)
    monkeypatch.undo()
    _same(ours, _drivers(writes))
    assert added == [writes[0][1]]


def test_a_short_row_is_padded_with_unset_values_as_the_driver_does():
    writes = [(BLOCK, (b"h" * 32, 1, None, b"c")), (BLOCK, (b"k" * 32, 2))]
    ours = unlogged_batch(writes)
    _same(ours, _drivers(writes))
    assert ours._statements_and_parameters[1][2][2:] == [UNSET_VALUE, UNSET_VALUE]


def test_a_value_of_the_wrong_type_raises_the_drivers_error_naming_the_column():
    with pytest.raises(TypeError, match='column "size"'):
        unlogged_batch([(BLOCK, (b"h" * 32, 1, None, b"c")), (BLOCK, (b"k" * 32, "two", None, b"c"))])
    with pytest.raises(AttributeError):  # the driver's own error for a number in a text column
        unlogged_batch([(BLOCK, (b"h" * 32, 1, None, b"c")), (BLOCK, (b"k" * 32, 2, 3, b"c"))])


def test_an_unset_routing_key_raises_the_drivers_error():
    with pytest.raises(ValueError, match="routing key"):
        unlogged_batch([(BLOCK, (b"h" * 32, 1, None, b"c")), (BLOCK, (UNSET_VALUE, 2, None, b"c"))])


def test_no_rows_make_an_empty_batch():
    assert len(unlogged_batch([])) == 0
