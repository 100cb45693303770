"""A queue of concurrent driver requests, with retries, driven by the caller's thread.

The driver completes requests on its event-loop thread; this module only
queues completions there and runs every result handler in the caller's
thread, so pipeline state needs no locks and a handler may submit more
requests without re-entering the event loop. ``submit`` never blocks: past
``max_requests`` in flight, requests wait in a backlog that completions drain. Callers bound
their own memory (e.g. bytes held for upload) by calling :meth:`poll`.

Timeouts and unavailability are retried with exponential backoff (the
request is idempotent: every casstor write is an upsert of the same value);
other errors, or a request that keeps failing, raise from :meth:`poll` /
:meth:`drain`.

A caller that fails gives up its requests: :meth:`~RequestQueue.cancel` forgets
what was not sent, and :meth:`~RequestQueue.settle` waits (bounded) for what
was, running no handler, so nothing submits more work; the queue can then
carry the caller's clean-up requests (e.g. releasing claims), settled the same
way. The parts of the store pipeline see a queue only through :class:`Requests`,
so unit tests can give them a fake one.

Example::

    >>> requests = RequestQueue(session, max_requests=32)          # doctest: +SKIP
    >>> requests.submit(insert, (h, len(data), data), lambda rows: None)  # doctest: +SKIP
    >>> requests.submit_batch(insert_existing, [(h, len(data))], lambda rows: None)  # doctest: +SKIP
    >>> requests.drain()                                             # doctest: +SKIP
"""

from __future__ import annotations

import heapq
import itertools
import queue
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Protocol, TypeVar

from cassandra import OperationTimedOut, ReadFailure, ReadTimeout, Unavailable, WriteTimeout
from cassandra.cluster import EXEC_PROFILE_DEFAULT, NoHostAvailable, Session
from cassandra.connection import ConnectionBusy, ConnectionException
from cassandra.protocol import OverloadedErrorMessage
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType, PreparedStatement

from casstor_ops.cluster.connection import REQUEST_TIMEOUT_S
from casstor_ops.store.cql.runs import runs
from casstor_ops.store.cql.statements import Query

# ReadFailure: an overloaded node drops queued reads and reports a failure (seen at load average 15);
# a read is always safe to repeat.
RETRYABLE = (OperationTimedOut, ReadTimeout, ReadFailure, WriteTimeout, Unavailable, NoHostAvailable,
             ConnectionBusy, ConnectionException, OverloadedErrorMessage)
ATTEMPTS = 5
BACKOFF_S = 0.2
BUSY_WAIT_S = 0.01
BUSY_RETRIES = 1000  # ~10 s of a connection that never drains its write buffer, then the error is raised
# Bytes of values an unlogged batch carries at most (heads, block lists, small blocks' content): under Cassandra's
# batch_size_fail_threshold (50 KiB) with room for the estimate's error (the values, not their encoding; the
# largest such batch measured ~34 KiB as the node counts it).
UNLOGGED_BATCH_BYTES = 24 * 1024
# Rows (block lists, heads, directory entries) per unlogged batch, beside UNLOGGED_BATCH_BYTES of values: the count
# bounds a batch of tiny rows.
ROW_BATCH_ROWS = 128

Row = TypeVar("Row")


def _busy(exc: BaseException) -> bool:
    """The driver refused to queue more on a full connection (libev raises ConnectionBusy, wrapped).

    Sessions casstor opens refuse only once their send queue reaches its limit
    (:mod:`casstor_ops.cluster.libev_connection`); a session opened elsewhere and handed to the store refuses
    as the driver does."""
    if isinstance(exc, ConnectionBusy):
        return True
    return isinstance(exc, NoHostAvailable) and bool(exc.errors) and all(
        isinstance(e, ConnectionBusy) for e in exc.errors.values())


class Requests(Protocol):
    """What the store pipeline's parts use of a :class:`RequestQueue` (unit tests pass a fake)."""

    @property
    def busy(self) -> bool: ...

    def submit(self, statement: Any, values: Any, on_result: Callable[[Any], None]) -> None: ...

    def submit_batch(self, statement: Any, rows: list[tuple], on_result: Callable[[Any], None]) -> None: ...

    def poll(self, block: bool = True) -> bool: ...

    def cancel(self) -> None: ...

    def settle(self, timeout_s: float) -> bool: ...


@dataclass(order=True)
class _Queued:
    """A request in the queue: sent, waiting in the backlog, or waiting for its retry (ordered by ``due``)."""

    due: float
    seq: int
    statement: Any = field(compare=False)
    values: Any = field(compare=False)
    on_result: Callable[[Any], None] = field(compare=False)
    attempt: int = field(default=0, compare=False)
    busy_retries: int = field(default=0, compare=False)


class RequestQueue:
    """At most ``max_requests`` requests in flight; results handled in the caller's thread.

    ``execution_profile`` (a name or a profile) applies to every request, e.g.
    :attr:`Statements.plain_rows <casstor_ops.store.cql.statements.Statements.plain_rows>`.
    """

    def __init__(self, session: Session, max_requests: int, timeout_s: float = REQUEST_TIMEOUT_S,
                 attempts: int = ATTEMPTS, execution_profile: Any = EXEC_PROFILE_DEFAULT) -> None:
        self._session = session
        self._profile = execution_profile
        self.max_requests = max_requests
        self._timeout = timeout_s
        self._attempts = attempts
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._backlog: deque[_Queued] = deque()
        self._retries: list[_Queued] = []  # heap by due time
        self._seq = itertools.count()
        self.in_flight = 0

    @property
    def busy(self) -> bool:
        """Anything sent, waiting for a retry, or in the backlog."""
        return bool(self.in_flight or self._retries or self._backlog)

    def submit(self, statement: Any, values: Any, on_result: Callable[[Any], None]) -> None:
        """Send now if fewer than ``max_requests`` are in flight, else queue; ``on_result(rows)`` runs in a later
        poll."""
        request = _Queued(0.0, next(self._seq), statement, values, on_result)
        if self.in_flight < self.max_requests and not self._backlog:
            self._send(request)
        else:
            self._backlog.append(request)

    def submit_batch(self, statement: Any, rows: list[tuple], on_result: Callable[[Any], None]) -> None:
        """:meth:`submit` of ``statement`` bound to each of ``rows`` as one request (:func:`unlogged_batch`)."""
        self.submit(unlogged_batch([Query(statement, row) for row in rows]), None, on_result)

    def _send(self, request: _Queued) -> None:
        future = self._session.execute_async(request.statement, request.values, timeout=self._timeout,
                                             execution_profile=self._profile)
        self.in_flight += 1
        done = self._done
        future.add_callbacks(lambda rows: done.put((request, rows, None)),
                             lambda exc: done.put((request, None, exc)))

    def _fill(self) -> None:
        now = time.monotonic()
        while self._retries and self._retries[0].due <= now and self.in_flight < self.max_requests:
            self._send(heapq.heappop(self._retries))
        while self._backlog and self.in_flight < self.max_requests:
            self._send(self._backlog.popleft())

    def poll(self, block: bool = True) -> bool:
        """Handle one completion (waiting for it when ``block``); False if there was none."""
        self._fill()
        if not self.in_flight and not self._retries:
            return False
        try:
            if not block:
                item = self._done.get_nowait()
            elif self.in_flight:
                wait = (max(0.0, self._retries[0].due - time.monotonic()) + 0.001) if self._retries else None
                item = self._done.get(timeout=wait)
            else:  # only retries pending: sleep until the first is due
                time.sleep(max(0.0, self._retries[0].due - time.monotonic()))
                self._fill()
                return True
        except queue.Empty:  # a retry fell due
            self._fill()
            return block
        request, rows, exc = item
        self.in_flight -= 1
        if exc is not None:
            if _busy(exc) and request.busy_retries < BUSY_RETRIES:
                # The connection's write buffer is full (back-pressure, not a failure): retry shortly.
                request.busy_retries += 1
                request.due = time.monotonic() + BUSY_WAIT_S
            elif isinstance(exc, RETRYABLE) and request.attempt + 1 < self._attempts:
                request.attempt += 1
                request.due = time.monotonic() + BACKOFF_S * (2 ** (request.attempt - 1)) * (0.5 + random.random())
            else:
                raise exc
            heapq.heappush(self._retries, request)
        else:
            request.on_result(rows)
        self._fill()
        return True

    def drain(self) -> None:
        """Wait for everything submitted (including what handlers submit meanwhile)."""
        while self.busy:
            self.poll()

    def cancel(self) -> None:
        """Forget every request not sent yet (backlog and retries): a failing caller issues no more work."""
        self._backlog.clear()
        self._retries.clear()

    def settle(self, timeout_s: float) -> bool:
        """Send what is queued and wait up to ``timeout_s`` for every request, retrying none and running no
        handler (a failing caller's last requests: their answers could only start more work). True if all
        were answered; either way the requests is empty afterwards and answers arriving later are dropped."""
        deadline = time.monotonic() + timeout_s
        self._retries.clear()
        self._fill()
        while self.in_flight:
            try:
                self._done.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.in_flight -= 1
            self._fill()
        settled = not self.in_flight
        # Requests still in flight answer into the old queue (each captured it when sent), never read again.
        self._done = queue.SimpleQueue()
        self.in_flight = 0
        self._backlog.clear()
        return settled


def unlogged_batch(writes: Sequence[Query]) -> BatchStatement:
    """Each query of ``writes`` as one request (an unlogged batch: no batch log, no atomicity).

    The rows are the batch the driver's ``BatchStatement.add`` makes of them; those after the first are serialized
    here (:func:`_serialized`).

    Example::

        >>> session.execute_async(unlogged_batch([Query(insert_version, row) for row in rows]))   # doctest: +SKIP

    Failures: the driver's own, from ``add``: for a value it cannot bind, a ``TypeError`` naming the column (or the
    column type's own error: ``AttributeError`` for a number in a text column); ``ValueError`` for an unset routing
    key.
    """
    batch = BatchStatement(BatchType.UNLOGGED)
    if not writes:
        return batch
    batch.add(*writes[0])  # the driver's own path: the batch's routing key and keyspace come from its first row
    serializers: dict[int, list] = {}
    for statement, values in writes[1:]:
        serialized = _serialized(statement, values, serializers)
        if serialized is None:
            batch.add(statement, values)  # padding, a payload, or the driver's error for a value
        else:
            batch._statements_and_parameters.append((True, statement.query_id, serialized))  # add's own row
    return batch


def _serialized(statement: Any, values: Sequence, serializers: dict[int, list]) -> list | None:
    """``values`` as the driver's ``bind`` serializes a full row of a prepared statement; None for any other row.

    Why: ``BatchStatement.add`` makes a ``BoundStatement`` a row (8.7 us of client CPU a row in a tree store,
    24,600 rows for 5,626 small files), for a routing key and payload a batch takes from its first row only."""
    if not isinstance(statement, PreparedStatement) or isinstance(values, dict):
        return None
    columns = statement.column_metadata
    if len(values) != len(columns) or statement.custom_payload or statement.column_encryption_policy:
        return None
    if any(values[index] is UNSET_VALUE for index in statement.routing_key_indexes or ()):
        return None  # the driver refuses it
    serialize = serializers.get(id(statement))
    if serialize is None:
        serialize = serializers[id(statement)] = [column.type.serialize for column in columns]
    version = statement.protocol_version
    try:
        return [value if value is None or value is UNSET_VALUE else to_bytes(value, version)
                for to_bytes, value in zip(serialize, values)]
    except Exception:  # a value of another type: the driver's bind, called next, raises its own error for it
        return None


def row_batches(rows: Sequence[Row], max_rows: int = ROW_BATCH_ROWS, max_bytes: int = UNLOGGED_BATCH_BYTES,
                values: Callable[[Row], tuple] = lambda row: row) -> list[list[Row]]:
    """``rows`` in order, cut into groups of at most ``max_rows`` rows and about ``max_bytes`` bytes of values (a
    row larger than that goes alone); ``values``: a row's values, when a row carries more than them (a
    :class:`Query`: :func:`query_batches`).

    Example::

        >>> [len(g) for g in row_batches([(b"x" * 100,)] * 5, max_rows=2)]
        [2, 2, 1]
        >>> [len(g) for g in row_batches([(b"x" * 600,)] * 3, max_bytes=1000)]
        [1, 1, 1]
    """
    return list(runs(rows, lambda row: sum(_value_bytes(value) for value in values(row)), max_rows, max_bytes))


def query_batches(queries: Sequence[Query], max_rows: int = ROW_BATCH_ROWS,
                  max_bytes: int = UNLOGGED_BATCH_BYTES) -> list[list[Query]]:
    """:func:`row_batches` of ``queries`` (heads, directory entries), by the bytes of their values, not their
    statements.

    Example::

        >>> [len(g) for g in query_batches([Query("stmt", (b"x" * 600,))] * 3, max_bytes=1000)]
        [1, 1, 1]
    """
    return row_batches(queries, max_rows, max_bytes, values=attrgetter("values"))


def _value_bytes(value) -> int:
    if isinstance(value, (bytes, str)):
        return len(value)
    if isinstance(value, dict):  # an S3 object's metadata or headers
        return sum(len(k) + len(v) for k, v in value.items())
    return 16
