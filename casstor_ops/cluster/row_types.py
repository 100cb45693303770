"""Rows as named tuples whose class is made once per column list, not once per result.

The driver's default ``named_tuple_factory`` builds a new ``namedtuple``
class for every result it decodes (66 µs for a head row of ten columns, against 1 µs here),
the largest single cost of a one-row read in the server (py-spy of
``casstor serve`` answering small GETs from its cache: 15 % of the
server's Python time went to making row classes for the head reads).
:func:`named_rows` asks the driver's own factory once per distinct column
list, so the row classes (and the names they clean up, e.g.
``count(*)`` to ``count``) are exactly the driver's.

Example::

    >>> rows = named_rows(["id", "size"], [("a", 1)])
    >>> rows[0].size
    1
    >>> type(named_rows(["id", "size"], [("b", 2)])[0]) is type(rows[0])
    True

Not for a lightweight transaction: the driver's ``was_applied`` only knows
its own factories (:attr:`Statements.named_rows
<casstor_ops.store.cql.statements.Statements.named_rows>` is the profile for
reads).

Failures: those of the driver's factory (a column list no row class can be
made of), raised at the first result with it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from cassandra.query import named_tuple_factory

ROW_TYPES = 1024  # distinct column lists kept: casstor prepares fewer than a hundred statements


@functools.lru_cache(maxsize=ROW_TYPES)
def _row_type(colnames: tuple[str, ...]) -> Callable[..., tuple]:
    return type(named_tuple_factory(list(colnames), [(None,) * len(colnames)])[0])


def named_rows(colnames: Sequence[str], rows: Sequence[Sequence]) -> list[tuple]:
    """The driver's named-tuple rows of a result (a row factory for an execution profile)."""
    row_type = _row_type(tuple(colnames))
    return [row_type(*row) for row in rows]
