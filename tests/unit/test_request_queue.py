"""RequestQueue's retries, back-pressure and settling against a fake driver session."""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest, OperationTimedOut, ReadTimeout
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionBusy
from cassandra.query import BatchStatement

from casstor_ops.store.cql import request_queue
from casstor_ops.store.cql.request_queue import RequestQueue

NEVER = object()  # an outcome: the request stays in flight until answered by hand


class FakeFuture:
    def __init__(self, outcome) -> None:
        self._outcome = outcome
        self._callbacks = None

    def add_callbacks(self, callback, errback) -> None:
        self._callbacks = (callback, errback)
        if self._outcome is not NEVER:
            self.answer(self._outcome)

    def answer(self, outcome) -> None:
        callback, errback = self._callbacks
        if isinstance(outcome, BaseException):
            errback(outcome)
        else:
            callback(outcome)


class FakeSession:
    """``execute_async`` answers each request with the next outcome: rows, an exception, or NEVER."""

    def __init__(self, *outcomes) -> None:
        self._outcomes = list(outcomes)
        self.sent: list = []
        self.futures: list[FakeFuture] = []

    def execute_async(self, statement, params, timeout, execution_profile) -> FakeFuture:
        self.sent.append(statement)
        self.futures.append(FakeFuture(self._outcomes.pop(0)))
        return self.futures[-1]


@pytest.fixture(autouse=True)
def no_waits(monkeypatch):
    monkeypatch.setattr(request_queue, "BACKOFF_S", 0.001)
    monkeypatch.setattr(request_queue, "BUSY_WAIT_S", 0.0)


def run(requests: RequestQueue, n: int = 1) -> list:
    results: list = []
    for i in range(n):
        requests.submit(f"request {i}", (), results.append)
    requests.drain()
    return results


def test_a_timeout_is_retried_then_succeeds():
    session = FakeSession(OperationTimedOut(), ReadTimeout("slow"), [("row",)])
    requests = RequestQueue(session, max_requests=4)
    assert run(requests) == [[("row",)]]
    assert session.sent == ["request 0"] * 3 and not requests.busy


def test_a_non_retryable_error_raises_from_poll_without_the_handler():
    session = FakeSession(InvalidRequest("bad request"))
    requests = RequestQueue(session, max_requests=4)
    results: list = []
    requests.submit("request", (), results.append)
    with pytest.raises(InvalidRequest):
        requests.poll()
    assert results == [] and session.sent == ["request"]


def test_a_request_that_keeps_timing_out_raises_once_attempts_are_exhausted():
    session = FakeSession(*[OperationTimedOut()] * 3)
    requests = RequestQueue(session, max_requests=4, attempts=3)
    with pytest.raises(OperationTimedOut):
        run(requests)
    assert len(session.sent) == 3


def test_a_busy_connection_is_back_pressure_not_an_attempt():
    busy = [ConnectionBusy("write buffer full"), NoHostAvailable("all busy", {"h": ConnectionBusy("full")})]
    session = FakeSession(*busy * 5, [("row",)])
    requests = RequestQueue(session, max_requests=4, attempts=2)
    assert run(requests) == [[("row",)]]
    assert len(session.sent) == 11


def test_a_connection_that_stays_busy_raises(monkeypatch):
    monkeypatch.setattr(request_queue, "BUSY_RETRIES", 3)
    session = FakeSession(*[ConnectionBusy("write buffer full")] * 4)
    requests = RequestQueue(session, max_requests=4, attempts=1)  # past its busy retries, a busy is an attempt
    with pytest.raises(ConnectionBusy):
        run(requests)
    assert len(session.sent) == 4


def test_submit_batch_sends_one_unlogged_batch():
    session = FakeSession([])
    requests = RequestQueue(session, max_requests=4)
    requests.submit_batch("INSERT INTO t (a, b) VALUES (%s, %s)", [(1, 2), (3, 4)], lambda rows: None)
    requests.drain()
    [batch] = session.sent
    assert isinstance(batch, BatchStatement) and len(batch) == 2


def test_cancel_forgets_unsent_work_and_settle_runs_no_handler():
    session = FakeSession(NEVER, NEVER, [], [])
    requests = RequestQueue(session, max_requests=2)
    handled: list = []
    for i in range(4):
        requests.submit(f"request {i}", (), handled.append)
    requests.cancel()  # requests 2 and 3 were never sent
    session.futures[0].answer([("late",)])
    assert requests.settle(0.05) is False  # request 1 never answered
    assert not requests.busy and handled == []
    session.futures[1].answer([("later",)])  # an answer after settling is dropped
    assert not requests.poll() and handled == []
    assert session.sent == ["request 0", "request 1"]


def test_settle_sends_what_is_queued_without_retries():
    session = FakeSession([], OperationTimedOut(), [])
    requests = RequestQueue(session, max_requests=1)
    handled: list = []
    for i in range(3):
        requests.submit(f"release {i}", (), handled.append)
    assert requests.settle(1.0) is True
    assert session.sent == ["release 0", "release 1", "release 2"] and handled == [] and not requests.busy
