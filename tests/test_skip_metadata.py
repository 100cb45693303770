"""Prepared reads answered without their column list, on the real node (casstor_ops.cluster.skip_metadata): the rows
still decode right, page after page, and after their table gains a column."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cassandra.cluster import Session
from cassandra.query import SimpleStatement

from casstor_ops.cluster.connection import connect

KEYSPACE = "casstor_test_skip"


@pytest.fixture()
def recorded(cql) -> Iterator[tuple[Session, list]]:
    """A session of :func:`connect` whose handler also records the column list of every rows answer (None: left
    out), and an empty table of a plain, a map and a clustering column."""
    session = connect(start=False)
    answers: list = []

    class Recording(session.client_protocol_handler):
        @classmethod
        def decode_message(cls, *args, **kwargs):
            message = super().decode_message(*args, **kwargs)
            if getattr(message, "parsed_rows", None) is not None:
                answers.append(message.column_metadata)
            return message

    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"DROP TABLE IF EXISTS {KEYSPACE}.rows")
    session.execute(f"CREATE TABLE {KEYSPACE}.rows (id text, n int, size int, meta map<text, text>, "
                    "PRIMARY KEY (id, n))")
    session.client_protocol_handler = Recording
    try:
        yield session, answers
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        session.cluster.shutdown()


def test_a_prepared_read_is_answered_without_columns_and_decodes_every_page(recorded) -> None:
    """Checks that every page of a prepared read (3 rows a page, 7 rows) came without its column list, and that the
    rows, a map among their values, are those written; a statement the driver cannot skip for (not prepared) still
    gets its columns."""
    session, answers = recorded
    insert = session.prepare(f"INSERT INTO {KEYSPACE}.rows (id, n, size, meta) VALUES (?, ?, ?, ?)")
    for n in range(7):
        session.execute(insert, ("a", n, 100 + n, {"k": str(n)} if n % 2 else None))
    read = session.prepare(f"SELECT n, size, meta FROM {KEYSPACE}.rows WHERE id = ?")
    read.fetch_size = 3
    answers.clear()
    rows = list(session.execute(read, ("a",)))
    assert [(row.n, row.size, row.meta) for row in rows] == \
        [(n, 100 + n, {"k": str(n)} if n % 2 else None) for n in range(7)]
    assert answers == [None, None, None]  # three pages, none with the column list
    answers.clear()
    session.execute(SimpleStatement(f"SELECT n FROM {KEYSPACE}.rows WHERE id = 'a'"))
    assert answers[0] is not None and [column[2] for column in answers[0]] == ["n"]


def test_a_prepared_read_decodes_right_after_its_table_gains_a_column(recorded) -> None:
    """Injects a schema change under a prepared read: a column added to its table (as a migration does) and filled;
    checks the read, which names its columns, still decodes its rows right without a column list."""
    session, answers = recorded
    session.execute(f"INSERT INTO {KEYSPACE}.rows (id, n, size, meta) VALUES ('b', 1, 5, {{'x': 'y'}})")
    read = session.prepare(f"SELECT size, meta FROM {KEYSPACE}.rows WHERE id = ? AND n = ?")
    assert tuple(session.execute(read, ("b", 1)).one()) == (5, {"x": "y"})
    session.execute(f"ALTER TABLE {KEYSPACE}.rows ADD extra blob")
    session.execute(f"UPDATE {KEYSPACE}.rows SET extra = 0xff00 WHERE id = 'b' AND n = 1")
    answers.clear()
    assert tuple(session.execute(read, ("b", 1)).one()) == (5, {"x": "y"})
    assert answers == [None]
