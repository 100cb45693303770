"""QueuedLibevConnection on the real node: a request after a send met a full socket buffer is sent, not refused; an
answered request is freed at once, and one not answered in time still times out."""

from __future__ import annotations

import gc
import weakref

import pytest
from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable
from cassandra.io.libevreactor import LibevConnection

from casstor_ops.cluster.connection import endpoint_from_env, open_cluster
from casstor_ops.cluster.libev_connection import QueuedLibevConnection


def _read_after_a_full_socket(connection_class: type) -> str:
    """Through a session of ``connection_class``: mark its connection as the driver's reactor does when a send
    meets a full socket buffer, then read; the release version read."""
    cluster = open_cluster(endpoint_from_env())
    cluster.connection_class = connection_class
    session = cluster.connect()
    try:
        (pool,) = session._pools.values()  # one node, one connection (protocol v4)
        pool._connection._socket_writable = False
        return session.execute("SELECT release_version FROM system.local").one()[0]
    finally:
        cluster.shutdown()


def test_a_request_meeting_a_full_socket_buffer_is_queued_not_refused(cql) -> None:
    """Injects the state the driver's libev reactor sets when a send meets a full socket buffer (its connection's
    ``_socket_writable`` flag cleared, until its whole queue has drained: with ~300 KiB blocks from four files at
    once that lasted seconds); checks a request through casstor's connection class, whose queue is short, is sent
    and answered, and the driver's own class refuses it as 'overloaded' (ConnectionBusy, in one NoHostAvailable),
    as tree stores saw fail a file."""
    assert _read_after_a_full_socket(QueuedLibevConnection).startswith("5.")
    with pytest.raises(NoHostAvailable, match="is overloaded"):
        _read_after_a_full_socket(LibevConnection)


def test_an_answered_request_is_freed_by_its_reference_count(cql) -> None:
    """Checks that a request answered and let go of is freed at once, with Python's cyclic collector off: the
    driver's request timer held the request's own bound method, so every answered request (with the values it was
    sent with) was a reference cycle left to that collector."""
    session = open_cluster(endpoint_from_env()).connect()
    gc.disable()
    try:
        future = session.execute_async("SELECT release_version FROM system.local", timeout=30)
        assert future.result().one()[0].startswith("5.")
        freed = weakref.ref(future)
        del future
        assert freed() is None
    finally:
        gc.enable()
        session.cluster.shutdown()


def test_a_request_not_answered_in_time_still_times_out(cql) -> None:
    """Injects a request timeout (1 us) no answer can meet; checks the timer, which holds the request weakly, still
    fires for a request in flight: the driver's OperationTimedOut, not the rows that arrive later."""
    session = open_cluster(endpoint_from_env()).connect()
    try:
        with pytest.raises(OperationTimedOut):
            session.execute("SELECT keyspace_name FROM system_schema.tables", timeout=0.000001)
        assert session.execute("SELECT release_version FROM system.local").one()[0].startswith("5.")
    finally:
        session.cluster.shutdown()
