"""``casstor serve`` as a user runs it: a real server process on a free port, real HTTP clients, the real node.

Clients: ``curl`` (subprocess) and the standard library (``http.client``,
``urllib``). The servers are started with ``--port 0`` and read their port
from the ``listening on`` line.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from casstor_ops.serve.process import ServerProcess
from casstor_ops.store.keyspaces import DATA_KS, META_KS
from casstor_ops.store.leases import active_writers
from casstor_ops.store.reclaim_window import OFFLINE, clear_window, open_window

from .support import CASSTOR

LEASE_REUSE_S = 3
SIZES = [0, 1, 1024 * 1024, 3 * 1024 * 1024 + 17]  # the last is cut into many blocks (max 256 KiB)


class Server(ServerProcess):
    """A ``casstor serve`` process with a request helper (``http.client``, the key quoted as a client would)."""

    def request(self, method: str, key: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            connection.request(method, "/" + quote(key), body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", *args], capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def server(cql) -> Iterator[Server]:
    running = Server("--lease-reuse", str(LEASE_REUSE_S))
    yield running
    code, log = running.stop()
    assert code == 0, log


@pytest.mark.parametrize("size", SIZES)
def test_round_trip(server: Server, size: int, tmp_path: Path) -> None:
    content = os.urandom(size)
    key = f"round-trip/{size}.bin"
    source = tmp_path / "in.bin"
    source.write_bytes(content)
    put = curl("-T", str(source), "-w", "\n%{http_code}", server.url(key))
    body, code = put.stdout.rsplit(b"\n", 1)
    assert code == b"200", put
    assert json.loads(body)["bytes"] == size

    with urllib.request.urlopen(server.url(key)) as response:
        assert response.read() == content
        assert response.headers["Content-Length"] == str(size)
        etag = response.headers["ETag"]
        assert response.headers["Last-Modified"].endswith(" GMT")
    status, headers, head_body = server.request("HEAD", key)
    assert (status, headers["content-length"], headers["etag"], head_body) == (200, str(size), etag, b"")
    assert server.request("GET", key, headers={"If-None-Match": etag})[0] == 304
    assert curl("-o", str(tmp_path / "out.bin"), server.url(key)).returncode == 0
    assert hashlib.sha256((tmp_path / "out.bin").read_bytes()).digest() == hashlib.sha256(content).digest()


def test_a_range_is_answered_206_and_one_past_the_end_416(server: Server) -> None:
    content = os.urandom(600_000)
    assert server.request("PUT", "range.bin", content)[0] == 200
    status, headers, body = server.request("GET", "range.bin", headers={"Range": "bytes=300000-300099"})
    assert (status, headers["content-range"], body) == (206, "bytes 300000-300099/600000", content[300000:300100])
    status, _, body = server.request("GET", "range.bin", headers={"Range": "bytes=-10"})
    assert (status, body) == (206, content[-10:])
    status, headers, _ = server.request("GET", "range.bin", headers={"Range": "bytes=600000-"})
    assert (status, headers["content-range"]) == (416, "bytes */600000")


def _damage_block(cql, key: str, middle: bool) -> None:
    """Flip a bit of the first (or the middle) block of ``key``'s committed version."""
    version = cql.execute(cql.prepare(f"SELECT version FROM {META_KS}.files WHERE id = ?"), (key,)).one().version
    hashes = [row.hash for row in cql.execute(
        cql.prepare(f"SELECT hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"), (key, version))]
    victim = hashes[len(hashes) // 2 if middle else 0]
    content = cql.execute(cql.prepare(f"SELECT content FROM {DATA_KS}.blocks WHERE hash = ?"), (victim,)).one().content
    cql.execute(cql.prepare(f"UPDATE {DATA_KS}.blocks SET content = ? WHERE hash = ?"),
                (bytes([content[0] ^ 1]) + content[1:], victim))


def test_a_damaged_first_block_is_502_before_any_byte(server: Server, cql) -> None:
    assert server.request("PUT", "damaged/first", os.urandom(1_000_000))[0] == 200
    _damage_block(cql, "damaged/first", middle=False)
    status, _, body = server.request("GET", "damaged/first")
    assert status == 502 and b"does not match its hash" in body and body.count(b"\n") == 1


def test_a_damaged_block_mid_file_cuts_the_response_short(server: Server, cql) -> None:
    content = os.urandom(4_000_000)
    assert server.request("PUT", "damaged/middle", content)[0] == 200
    _damage_block(cql, "damaged/middle", middle=True)
    with pytest.raises(http.client.IncompleteRead) as caught:
        server.request("GET", "damaged/middle")
    assert 0 < len(caught.value.partial) < len(content)
    assert content.startswith(caught.value.partial)
    assert "GET 'damaged/middle': cut short after the headers: CorruptionError" in server.log
    assert "Traceback" not in server.log


def test_unknown_keys_are_404(server: Server) -> None:
    for method in ("GET", "HEAD", "DELETE"):
        assert server.request(method, "no/such/file")[0] == 404, method


def test_delete_removes_the_file(server: Server) -> None:
    assert server.request("PUT", "to-delete", b"bye")[0] == 200
    status, _, body = server.request("DELETE", "to-delete")
    assert (status, json.loads(body)["size"]) == (200, 3)
    assert server.request("GET", "to-delete")[0] == 404


@pytest.mark.parametrize("key", ["with space.txt", "caf\u00e9/\u20ac \u65e5\u672c.bin", "dots/..hidden/x.."])
def test_keys_are_any_utf8_id(server: Server, key: str) -> None:
    assert server.request("PUT", key, key.encode())[0] == 200
    assert server.request("GET", key)[2] == key.encode()
    listed = subprocess.run([*CASSTOR, "ls", "--json"], capture_output=True, timeout=120)
    assert key in {f["id"] for f in json.loads(listed.stdout)}


def test_an_encoded_slash_is_a_slash(server: Server) -> None:
    base = f"http://127.0.0.1:{server.port}"
    assert curl("-X", "PUT", "--data-binary", "slash", f"{base}/a%2Fb").returncode == 0
    assert curl(f"{base}/a/b").stdout == b"slash"


@pytest.mark.parametrize("path", ["/", "/a/../b", "/a//b", "/%00", "/%FF", "/a/./b"])
def test_bad_keys_are_400_and_reach_no_file(server: Server, path: str, tmp_path: Path) -> None:
    before = set(Path(".").iterdir())
    put = curl("--path-as-is", "-X", "PUT", "--data-binary", "x", "-o", "/dev/null", "-w", "%{http_code}",
               f"http://127.0.0.1:{server.port}{path}")
    assert put.stdout == b"400", put
    assert set(Path(".").iterdir()) == before


def test_identical_bodies_under_two_keys_upload_no_new_block(server: Server) -> None:
    content = os.urandom(2 * 1024 * 1024)
    first = json.loads(server.request("PUT", "dedup/one", content)[2])
    second = json.loads(server.request("PUT", "dedup/two", content)[2])
    assert first["new_bytes"] == len(content) and first["new_blocks"] == first["blocks"] > 1
    assert (second["new_blocks"], second["new_bytes"], second["blocks"]) == (0, 0, first["blocks"])
    assert server.request("GET", "dedup/two")[2] == content


def _until_no_writer(cql, timeout_s: float = 3 * LEASE_REUSE_S + 5) -> None:
    deadline = time.monotonic() + timeout_s
    while active_writers(cql) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert active_writers(cql) == 0


def test_writes_share_one_lease_given_up_when_idle(server: Server, cql) -> None:
    _until_no_writer(cql)
    for index in range(3):
        assert server.request("PUT", f"lease/{index}", b"x")[0] == 200
    assert active_writers(cql) == 1  # one lease for the three writes
    _until_no_writer(cql)            # an idle server leaves no lease for an offline reclaim to wait for


def test_an_offline_reclaim_window_is_answered_503(server: Server, cql) -> None:
    assert server.request("PUT", "window/before", b"kept")[0] == 200
    _until_no_writer(cql)
    open_window(cql, "reclaim@test:1", OFFLINE)
    try:
        status, headers, body = server.request("PUT", "window/during", b"refused")
        assert (status, headers["retry-after"]) == (503, "5")
        assert b"reclaim" in body and b"Traceback" not in body
        assert server.request("DELETE", "window/before")[0] == 503
        assert server.request("GET", "window/before")[2] == b"kept"  # reads go on
    finally:
        clear_window(cql)
    assert server.request("PUT", "window/after", b"ok")[0] == 200


def test_token_and_read_only(cql, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    guarded = Server("--token-file", str(token_file), "--read-only")
    try:
        assert guarded.request("GET", "round-trip/1.bin")[0] == 401
        assert guarded.request("GET", "round-trip/1.bin", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert guarded.request("PUT", "nope", b"x")[0] == 401  # the token is checked first
        good = {"Authorization": "Bearer s3cret-token"}
        assert curl("-o", "/dev/null", "-w", "%{http_code}", "-H", f"Authorization: {good['Authorization']}",
                    guarded.url("round-trip/1.bin")).stdout == b"200"
        for method in ("PUT", "DELETE"):
            status, headers, _ = guarded.request(method, "round-trip/1.bin", b"x", headers=good)
            assert (status, headers["allow"]) == (405, "GET, HEAD"), method
        assert guarded.request("GET", "round-trip/1.bin", headers=good)[0] == 200
    finally:
        code, log = guarded.stop()
    assert code == 0, log
    assert "bearer token required" in log and "-> 401" in log and "Traceback" not in log


def test_sigterm_stops_the_server_cleanly_and_gives_up_its_lease(cql) -> None:
    stopping = Server()
    assert stopping.request("PUT", "sigterm/a", b"x")[0] == 200
    assert active_writers(cql) >= 1
    code, log = stopping.stop()
    assert code == 0, log
    assert log.rstrip().endswith("casstor serve: stopped"), log
    _until_no_writer(cql, timeout_s=5)
