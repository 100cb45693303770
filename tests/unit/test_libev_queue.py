"""QueuedLibevConnection's busy rule, without a socket: busy only while QUEUE_LIMIT_BYTES wait to be sent."""

from __future__ import annotations

import threading
from collections import deque

from casstor_ops.cluster.libev_connection import QUEUE_LIMIT_BYTES, SEND_PIECE_BYTES, QueuedLibevConnection


def _connection(queued: list[bytes]) -> QueuedLibevConnection:
    conn = object.__new__(QueuedLibevConnection)  # no socket: only the queue the rule reads
    conn.deque, conn._deque_lock = deque(queued), threading.Lock()
    return conn


def test_writable_until_the_queue_reaches_its_limit() -> None:
    piece = bytes(SEND_PIECE_BYTES)
    below = _connection([piece] * (QUEUE_LIMIT_BYTES // SEND_PIECE_BYTES - 1))
    assert below._socket_writable
    assert not _connection([piece] * (QUEUE_LIMIT_BYTES // SEND_PIECE_BYTES))._socket_writable


def test_a_send_that_meets_a_full_socket_does_not_make_it_busy() -> None:
    """Injects the driver's reaction to a full socket buffer (it clears the flag and keeps it cleared until its
    whole queue has drained); checks a connection with a short queue stays writable."""
    conn = _connection([b"x" * 100])
    conn._socket_writable = False
    assert conn._socket_writable
