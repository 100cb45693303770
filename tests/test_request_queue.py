"""RequestQueue on the real node: bounded in-flight requests, handlers in the caller's thread, errors raised."""

import threading

import pytest
from cassandra import InvalidRequest

from casstor_ops.store.cql.request_queue import RequestQueue


def test_handlers_run_in_the_callers_thread_and_window_is_bounded(cql):
    stmt = cql.prepare("SELECT release_version FROM system.local WHERE key = ?")
    requests = RequestQueue(cql, max_requests=3)
    seen, peak = [], []
    for i in range(20):
        requests.submit(stmt, ("local",), lambda rows, i=i: seen.append((i, threading.get_ident(), rows[0][0])))
        peak.append(requests.in_flight)
    requests.drain()
    assert max(peak) <= 3 and not requests.busy
    assert sorted(i for i, _, _ in seen) == list(range(20))
    assert {ident for _, ident, _ in seen} == {threading.get_ident()}


def test_a_failing_request_raises_from_poll(cql):
    stmt = cql.prepare("SELECT hash FROM casstor_data.existing_blocks WHERE hash IN ? LIMIT ?")
    requests = RequestQueue(cql, max_requests=2)
    requests.submit(stmt, ([b"x"], 0), lambda rows: None)  # LIMIT 0 is rejected by the server
    with pytest.raises(InvalidRequest):
        requests.drain()
