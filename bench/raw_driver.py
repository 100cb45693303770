"""The raw-driver reference: the same blocks written and read with nothing but the driver.

What casstor's store and restore are measured against: prepared
``INSERT``/``SELECT`` statements of ``(hash, size, content)`` rows (reads by
one hash, or ``IN`` several, as casstor's restore does),
``execute_async`` with a requests of ``concurrency`` requests in flight (the
driver's ``execute_concurrent_with_args``), on the same session (same
consistency level) into a scratch table shaped like ``casstor_data.blocks``.
The scratch keyspace copies the replication of ``casstor_data``, so the
reference pays the same replica cost, and is dropped afterwards.

:func:`scratch_keyspace` makes such a keyspace with other tables (the
shapes of ``bench.pack_rows``).

Example::

    >>> with ScratchTable(session) as scratch:                        # doctest: +SKIP
    ...     seconds = scratch.write(blocks, concurrency=32)

Failures: a failed request raises the driver's exception (the first one);
the scratch keyspace is dropped even then.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any, Sequence

from cassandra import ConsistencyLevel
from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from casstor_ops.errors import CasstorError
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.cql.request_queue import RequestQueue

SCRATCH_KS = "casstor_bench_scratch"
SCRATCH_TABLE = "raw_blocks"

Block = tuple[bytes, bytes]  # (hash, content)

# Replication values come from system_schema; still checked before they go into DDL (DDL cannot be prepared).
_SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")


def replication_cql(session: Session, keyspace: str) -> str:
    """``keyspace``'s replication as CQL, for a scratch keyspace that pays the same replica cost."""
    row = session.execute(
        session.prepare("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?"),
        (keyspace,)).one()
    if row is None:
        raise CasstorError(f"keyspace {keyspace} does not exist: run 'casstor init'")
    items = dict(row.replication)
    if not all(_SAFE.match(k) and _SAFE.match(v) for k, v in items.items()):
        raise CasstorError(f"unexpected replication of {keyspace}: {items}")
    return "{" + ", ".join(f"'{k}': '{v}'" for k, v in items.items()) + "}"


@contextlib.contextmanager
def scratch_keyspace(session: Session, keyspace: str, tables: Sequence[str]) -> Iterator[None]:
    """``keyspace`` made afresh with the replication of ``casstor_data`` and ``tables`` (their DDL), dropped on exit.

    Example::

        >>> with scratch_keyspace(session, "casstor_bench_x", ["CREATE TABLE casstor_bench_x.t (k int PRIMARY KEY)"]):
        ...     session.execute("INSERT INTO casstor_bench_x.t (k) VALUES (1)")        # doctest: +SKIP

    Failures: a DDL error is raised; the keyspace is dropped on the way out, and a failure to drop it is raised
    unless another error is already on its way (the node is then likely unreachable: that error is the one to
    report).
    """
    def run(statement: str) -> None:
        session.execute(SimpleStatement(statement, consistency_level=ConsistencyLevel.ONE), timeout=120)

    run(f"DROP KEYSPACE IF EXISTS {keyspace}")
    run(f"CREATE KEYSPACE {keyspace} WITH replication = {replication_cql(session, DATA_KS)}")
    try:
        for ddl in tables:
            run(ddl)
        session.cluster.control_connection.wait_for_schema_agreement()
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            run(f"DROP KEYSPACE IF EXISTS {keyspace}")
        raise
    run(f"DROP KEYSPACE IF EXISTS {keyspace}")


class ScratchTable:
    """A throw-away copy of the ``blocks`` table; a context manager that drops its keyspace on exit."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._keyspace = scratch_keyspace(session, SCRATCH_KS, [
            f"CREATE TABLE {SCRATCH_KS}.{SCRATCH_TABLE} (hash blob PRIMARY KEY, size int, content blob)"])

    def __enter__(self) -> "ScratchTable":
        self._keyspace.__enter__()
        self._insert = self.session.prepare(
            f"INSERT INTO {SCRATCH_KS}.{SCRATCH_TABLE} (hash, size, content) VALUES (?, ?, ?)")
        self._select = self.session.prepare(f"SELECT content FROM {SCRATCH_KS}.{SCRATCH_TABLE} WHERE hash = ?")
        self._select_in = self.session.prepare(
            f"SELECT content FROM {SCRATCH_KS}.{SCRATCH_TABLE} WHERE hash IN ? LIMIT ?")
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self._keyspace.__exit__(exc_type, *exc)

    def write(self, blocks: Sequence[Block], concurrency: int, retry_busy: bool = False) -> float:
        """Write every block with ``concurrency`` requests in flight; returns the seconds taken.

        ``retry_busy``: send through the store's :class:`~casstor_ops.store.cql.request_queue.RequestQueue`, which waits
        and retries when libev's connection is full (``ConnectionBusy``: 20 x 1 MB in flight on a slow node),
        where ``execute_concurrent`` fails.
        """
        params = [(h, len(content), content) for h, content in blocks]
        start = time.perf_counter()
        self._execute(self._insert, params, concurrency, retry_busy, lambda rows: None)
        return time.perf_counter() - start

    def read(self, hashes: Sequence[bytes], concurrency: int, per_read: int = 1, retry_busy: bool = False) -> float:
        """Read every block back, ``per_read`` hashes a request (``IN``), ``concurrency`` requests in flight.

        Returns the seconds taken; raises :class:`CasstorError` if a block did not come back.
        """
        if per_read == 1:
            statement, params = self._select, [(h,) for h in hashes]
        else:
            groups = [list(hashes[i:i + per_read]) for i in range(0, len(hashes), per_read)]
            statement, params = self._select_in, [(g, len(g)) for g in groups]
        received = 0

        def count(rows) -> None:
            nonlocal received
            received += sum(1 for _ in rows)

        start = time.perf_counter()
        self._execute(statement, params, concurrency, retry_busy, count)
        seconds = time.perf_counter() - start
        if received != len(hashes):
            raise CasstorError(f"{len(hashes) - received} blocks written to the scratch table did not read back")
        return seconds

    def _execute(self, statement, params: list[tuple], concurrency: int, retry_busy: bool,
                 on_rows: Callable[[Any], None]) -> None:
        if not retry_busy:
            for _, rows in execute_concurrent_with_args(self.session, statement, params, concurrency=concurrency,
                                                         raise_on_first_error=True, results_generator=True):
                on_rows(rows)
            return
        requests = RequestQueue(self.session, concurrency)
        for row in params:
            requests.submit(statement, row, on_rows)
        requests.drain()
