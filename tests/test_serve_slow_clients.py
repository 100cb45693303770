"""``casstor serve`` against deliberately slow clients: more of them than write threads, a byte a second each.

Raw sockets (:class:`tests.serve_support.PartialPut`) send PUT bodies, chunked
and sized, and one request's headers, a byte a second; meanwhile a small PUT,
a DELETE and a GET from an ordinary client must be answered within their
normal latency, and every slow request is ended after its deadline
(``--body-timeout``, ``--header-timeout``) with a 408.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from casstor_ops.serve.writes import WRITE_THREADS

from .serve_support import PartialPut, Server, timed_request

BODY_TIMEOUT_S = 8
HEADER_TIMEOUT_S = 4
NORMAL_S = 3.0          # a small request on a loaded 2-core machine; milliseconds when idle
TRICKLE_S = 1.0
MB = 1_000_000


@pytest.fixture(scope="module")
def server(cql) -> Iterator[Server]:
    running = Server("--body-timeout", str(BODY_TIMEOUT_S), "--header-timeout", str(HEADER_TIMEOUT_S))
    yield running
    code, log = running.stop()
    assert code == 0, log


def _trickle(send: Callable[[bytes], None], data: bytes, stop: threading.Event) -> None:
    """Send ``data`` a byte a second until the server closes the connection, ``stop`` is set or it is all sent."""
    for byte in data:
        try:
            send(bytes([byte]))
        except OSError:
            return
        if stop.wait(TRICKLE_S):
            return


def test_slow_clients_pin_no_thread_and_are_ended_with_408(server: Server) -> None:
    """Injects WRITE_THREADS + 2 PUTs whose bodies arrive a byte a second (chunked, and with a 3 MB
    Content-Length: both went to a write thread at once before), and one client sending its request headers a
    byte a second. Checks: a small PUT, a DELETE and a GET are each answered within their normal latency
    meanwhile (before the fix the PUT and DELETE waited behind the pinned write threads, with no end: the
    slow clients were never idle for the 60 s idle timeout); each slow PUT is answered 408 once the body
    deadline is over, the slow header client 408 after the header deadline, and nothing of theirs is stored."""
    assert server.request("PUT", "slow/kept", b"kept")[0] == 200
    assert server.request("PUT", "slow/deleted", b"gone")[0] == 200
    stop = threading.Event()
    puts = [PartialPut(server, f"slow/put-{n}", None if n % 2 else 3 * MB) for n in range(WRITE_THREADS + 2)]
    headers = socket.create_connection((server.host, server.port), timeout=60)
    senders = [threading.Thread(target=_trickle, args=(put.send, b"x" * 60, stop)) for put in puts]
    senders.append(threading.Thread(target=_trickle, args=(headers.sendall, b"GET /slow/kept HTTP/1.1\r\n" * 3,
                                                           stop)))
    started = time.monotonic()
    for sender in senders:
        sender.start()
    try:
        time.sleep(2 * TRICKLE_S)  # every slow request is in (and, before the fix, each PUT on a write thread)
        for method, key, body, expected in [("PUT", "slow/small", b"small", 200), ("DELETE", "slow/deleted", None, 200),
                                            ("GET", "slow/kept", None, 200)]:
            # A request still waiting at 4x the normal latency fails with a socket timeout.
            status, seconds = timed_request(server.host, server.port, method, "/" + key, body, 4 * NORMAL_S)
            assert (status, method) == (expected, method) and seconds < NORMAL_S, (method, status, seconds)
        late = headers.recv(1024)
        assert late.startswith(b"HTTP/1.1 408 "), late
        assert time.monotonic() - started < HEADER_TIMEOUT_S + NORMAL_S
        assert [put.response()[0] for put in puts] == [408] * len(puts)
        assert time.monotonic() - started < BODY_TIMEOUT_S + NORMAL_S
    finally:
        stop.set()
        headers.close()
        for sender in senders:
            sender.join()
    for n in range(len(puts)):
        assert server.request("GET", f"slow/put-{n}")[0] == 404
    ended = [line for line in server.log.splitlines() if " -> 408: " in line]
    assert len(ended) == len(puts) and all("did not arrive within" in line for line in ended), ended
    assert "Traceback" not in server.log
