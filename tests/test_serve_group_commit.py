"""The group commit of small unconditional PUTs (``casstor_ops/serve/group_commit.py``) against a real server and node.

Many PUTs at once land byte-exact with the ETag a GET gives; PUTs of one key
queued together are committed in the order they arrived (the last one wins);
a batch refused by an offline reclaim window answers each of its requests
503 and the next batch is stored.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from casstor_ops.store.coordination.reclaim_window import WindowMode, clear_window, open_window

from .serve_support import Server, at_once, orphan_claims, until_no_writer

LEASE_REUSE_S = 2
CLIENTS = 24
SHARED = os.urandom(100_000)


@pytest.fixture(scope="module")
def server(cql) -> Iterator[Server]:
    running = Server("--lease-reuse", str(LEASE_REUSE_S))
    yield running
    assert "Traceback" not in running.stop_cleanly()


def _body(index: int) -> bytes:
    """Bodies of 0 bytes to 200 KB (empty, one block, several); every 5th is SHARED (one content, many keys)."""
    if index % 11 == 0:
        return b""
    return SHARED if index % 5 == 0 else os.urandom((index * 7919) % 200_000)


def test_many_concurrent_puts_land_byte_exact_with_their_etags(server: Server) -> None:
    """CLIENTS threads, each 4 PUTs of its own keys one after the other (so batches of many files form): every PUT
    is 200 with the store's JSON (today's fields); a GET of each key gives its bytes and the PUT's ETag; a content
    under several keys is new bytes for one of them only."""
    bodies = {f"group/{n}/{i}": _body(n * 4 + i) for n in range(CLIENTS) for i in range(4)}

    def client(n: int) -> list[tuple[str, int, dict, bytes]]:
        keys = [f"group/{n}/{i}" for i in range(4)]
        return [(key, *server.request("PUT", key, bodies[key])) for key in keys]

    answers = [answer for answers in at_once(client, CLIENTS) for answer in answers]
    for key, status, headers, body in answers:
        assert status == 200, (key, body)
        result = json.loads(body)
        assert (result["id"], result["bytes"]) == (key, len(bodies[key]))
        assert set(result) == {"id", "bytes", "blocks", "new_blocks", "new_bytes", "seconds", "new_stored_bytes"}
        got_status, got_headers, content = server.request("GET", key)
        assert (got_status, content) == (200, bodies[key]), key
        assert got_headers["etag"] == headers["etag"], key
    shared = {headers["etag"] for key, _, headers, _ in answers if bodies[key] == SHARED}
    assert len(shared) == 1  # one content under several keys, in one batch or not: one ETag
    # ... and its bytes counted new once, as PUTs one after the other would count them
    assert sum(json.loads(body)["new_bytes"] for key, _, _, body in answers if bodies[key] == SHARED) == len(SHARED)


def _send_put(server: Server, key: str, body: bytes) -> socket.socket:
    """A whole PUT sent on its own connection, its answer not read yet."""
    sock = socket.create_connection((server.host, server.port), timeout=120)
    sock.sendall(f"PUT /{quote(key)} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def test_puts_of_one_key_waiting_together_are_committed_in_their_order(server: Server) -> None:
    """Batches are held in flight (16 PUTs of 1 MB, sent first) while 6 PUTs of one key arrive, 0.1 s apart (each
    body read whole before the next is sent), between PUTs of other keys: they wait for the next batches
    together. Every PUT is 200 and the key's content and ETag are the last one's, as 6 PUTs sent one after the
    other would leave them. (Two of them in one batch: both heads in one unlogged batch, at one write time, and
    which one wins is Cassandra's tie-break, not their order.)"""
    bodies = [f"version {n} ".encode() * 1000 for n in range(6)]
    sent = [_send_put(server, f"order/large-{n}", os.urandom(1_000_000)) for n in range(16)]
    for n, body in enumerate(bodies):
        sent.append(_send_put(server, "order/key", body))
        sent.append(_send_put(server, f"order/other-{n}", os.urandom(50_000)))
        time.sleep(0.1)
    answers = [_answer(sock) for sock in sent]
    assert [status for status, _ in answers] == [200] * len(answers), answers
    status, headers, content = server.request("GET", "order/key")
    assert (status, content) == (200, bodies[-1])
    assert headers["etag"] == answers[-2][1]["etag"]  # the last PUT of the key


def _answer(sock: socket.socket) -> tuple[int, dict[str, str]]:
    """The status and headers of the response on ``sock`` (then closed)."""
    response = http.client.HTTPResponse(sock)
    try:
        response.begin()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        sock.close()


def test_a_batch_refused_by_a_reclaim_window_is_503_for_its_requests_and_the_next_batch_is_stored(
        server: Server, cql) -> None:
    """Injects an offline reclaim window (opened after the server's lease was given up), then 12 PUTs at once:
    each is answered 503 with Retry-After (none hangs, none is stored), a GET goes on meanwhile; once the window
    is cleared, 12 PUTs at once of the same keys are stored. No claim is left behind."""
    assert server.request("PUT", "window/kept", b"kept")[0] == 200
    until_no_writer(cql, 3 * LEASE_REUSE_S + 10)
    open_window(cql, "reclaim@test:group", WindowMode.OFFLINE)
    try:
        refused = at_once(lambda n: server.request("PUT", f"window/{n}", os.urandom(70_000)), 12)
        assert [(status, headers.get("retry-after")) for status, headers, _ in refused] == [(503, "5")] * 12
        assert all(b"reclaim" in body for _, _, body in refused)
        assert server.request("GET", "window/kept")[2] == b"kept"
        assert [server.request("GET", f"window/{n}")[0] for n in range(12)] == [404] * 12
    finally:
        clear_window(cql)
    bodies = [os.urandom(70_000) for _ in range(12)]
    stored = at_once(lambda n: server.request("PUT", f"window/{n}", bodies[n]), 12)
    assert [status for status, _, _ in stored] == [200] * 12
    assert [server.request("GET", f"window/{n}")[2] for n in range(12)] == bodies
    assert orphan_claims(cql) == []
