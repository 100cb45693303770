"""``casstor serve`` as a user runs it: a real server process on a free port, real HTTP clients, the real node.

Clients: ``curl`` (subprocess), the standard library (``http.client``,
``urllib``) and a raw socket for a request held in flight
(:class:`tests.serve_support.PartialPut`). The servers are started with
``--port 0`` and read their port from the ``listening on`` line. The options
(preconditions, limits, TLS, workers, metrics) are in
``tests/test_serve_options.py``.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from casstor_ops.store.api import Store
from casstor_ops.store.coordination.leases import active_writers
from casstor_ops.store.coordination.reclaim_window import WindowMode, clear_window, open_window
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import read_settings

from .serve_support import PartialPut, Server, at_once, block_hashes, curl, orphan_claims, until, until_no_writer
from .support import CASSTOR, flip_block, secret_file

LEASE_REUSE_S = 3
MB = 1_000_000
# 0 and 1 byte, exactly the chunker's minimum (one block) and 1 MB are read whole and answered in one piece
# (streams.SMALL_BODY_BYTES); 3 MB and 50 MB are streamed both ways (50 MB: hundreds of blocks, 5-30 s: slow).
SIZES = [0, 1, "chunk_min", MB, 3 * MB, pytest.param(50 * MB, marks=pytest.mark.slow)]


@pytest.fixture(scope="module")
def server(cql) -> Iterator[Server]:
    running = Server("--lease-reuse", str(LEASE_REUSE_S))
    yield running
    running.stop_cleanly()


@pytest.mark.parametrize("size", SIZES)
def test_round_trip(server: Server, size: int | str, tmp_path: Path, cql) -> None:
    size = read_settings(cql).chunk_min if size == "chunk_min" else size
    content = os.urandom(size)
    key = f"round-trip/{size}.bin"
    source = tmp_path / "in.bin"
    source.write_bytes(content)
    put = curl("-T", str(source), "-w", "\n%{http_code}", server.url(key))
    body, code = put.stdout.rsplit(b"\n", 1)
    assert code == b"200", put
    assert json.loads(body)["bytes"] == size
    if size == read_settings(cql).chunk_min:
        assert json.loads(body)["blocks"] == 1

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


def _block_offsets(cql, key: str) -> list[int]:
    """Where each block of ``key``'s committed version starts."""
    version = cql.execute(cql.prepare(f"SELECT version FROM {META_KS}.versions WHERE id = ?"), (key,)).one().version
    return [row.block_offset for row in cql.execute(
        cql.prepare(f"SELECT block_offset FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"), (key, version))]


@pytest.mark.parametrize("size", [MB, 3 * MB], ids=["whole", "streamed"])
def test_ranges_at_block_boundaries(server: Server, cql, size: int) -> None:
    content = os.urandom(size)
    assert server.request("PUT", "range/blocks.bin", content)[0] == 200
    offsets = _block_offsets(cql, "range/blocks.bin")
    assert len(offsets) > 3
    for boundary in offsets[1:3] + offsets[-1:]:
        for first, last in [(boundary - 1, boundary - 1), (boundary, boundary), (boundary - 1, boundary),
                            (boundary - 10, boundary + 9), (0, boundary - 1), (boundary, len(content) - 1)]:
            status, headers, body = server.request("GET", "range/blocks.bin",
                                                   headers={"Range": f"bytes={first}-{last}"})
            assert (status, headers["content-range"]) == (206, f"bytes {first}-{last}/{len(content)}")
            assert body == content[first:last + 1], (first, last)
    status, _, body = server.request("GET", "range/blocks.bin", headers={"Range": f"bytes=-{size - offsets[-1]}"})
    assert (status, body) == (206, content[offsets[-1]:])


def test_concurrent_puts_of_one_key_last_head_wins_both_bodies_stay(server: Server, cql) -> None:
    """Two PUTs of different 1 MB bodies to one key at once: both succeed, GET gives the one whose head was
    written last (its ETag), and the blocks of both stay in the store (the other is garbage until reclaim)."""
    bodies = [os.urandom(MB), os.urandom(MB)]
    results = at_once(lambda index: server.request("PUT", "race/key", bodies[index]), 2)
    assert [r[0] for r in results] == [200, 200]
    status, headers, got = server.request("GET", "race/key")
    winner = bodies.index(got)
    assert headers["etag"] == results[winner][1]["etag"] != results[1 - winner][1]["etag"]
    for body in bodies:
        hashes = block_hashes(cql, body)
        rows = cql.execute(cql.prepare(f"SELECT hash FROM {DATA_KS}.blocks WHERE hash IN ?"), (hashes,))
        assert {row.hash for row in rows} == set(hashes)


def test_a_client_gone_mid_upload_leaves_the_old_version_and_no_claim(server: Server, cql) -> None:
    """Injects a client that sends 14 of the 20 MB it announced, then closes its connection (three of the
    store's 4 MiB segments read); checks the previous version is still the one served, and that no claim is
    left on a block without an index row."""
    assert server.request("PUT", "gone/key", b"previous")[0] == 200
    cut = PartialPut(server, "gone/key", 20 * MB)
    cut.send(os.urandom(14 * MB))
    time.sleep(1)  # the server has read what was sent
    cut.abandon()
    # Logged once the store call has failed, i.e. after it released its claims.
    until(lambda: "'gone/key': the client disconnected" in server.log, 30, "the server to see the client go")
    assert server.request("GET", "gone/key")[2] == b"previous"
    assert orphan_claims(cql) == []


def test_a_client_gone_mid_small_body_leaves_the_old_version(server: Server) -> None:
    """Injects a client that sends 100 KB of the 500 KB it announced (a body the server reads whole before
    storing it), then closes its connection; checks the previous version is still the one served."""
    assert server.request("PUT", "gone/small", b"previous")[0] == 200
    cut = PartialPut(server, "gone/small", 500_000)
    cut.send(os.urandom(100_000))
    time.sleep(1)
    cut.abandon()
    until(lambda: "'gone/small': the client disconnected" in server.log, 30, "the server to see the client go")
    assert server.request("GET", "gone/small")[2] == b"previous"


def _damage_block(cql, key: str, middle: bool) -> None:
    """Flip a bit of the first (or the middle) block of ``key``'s committed version."""
    version = cql.execute(cql.prepare(f"SELECT version FROM {META_KS}.versions WHERE id = ?"), (key,)).one().version
    hashes = [row.hash for row in cql.execute(
        cql.prepare(f"SELECT hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"), (key, version))]
    flip_block(cql, hashes[len(hashes) // 2 if middle else 0])


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
    # The log is read from the server's stderr by a thread: the line may arrive just after the client saw the cut.
    until(lambda: "GET 'damaged/middle': cut short after the headers: CorruptionError" in server.log, 10,
          "the server's line about the cut")
    assert "Traceback" not in server.log


def test_a_get_reads_the_head_every_time_and_a_small_files_content_once(server: Server, cql) -> None:
    """Injects the loss of a small file's only block right after a first GET read it; checks that the next GET
    is still answered (from the server's content cache, by file hash: it read only the head), that the same
    content under another key is too, and that a moved head is never answered from the cache: an overwrite
    gives the new content, a removal 404."""
    content = os.urandom(5000)
    assert server.request("PUT", "cache/a", content)[0] == 200
    assert server.request("GET", "cache/a")[2] == content
    (digest,) = block_hashes(cql, content)
    row = cql.execute(cql.prepare(f"SELECT size, codec, content FROM {DATA_KS}.blocks WHERE hash = ?"),
                      (digest,)).one()
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (digest,))
    try:
        assert server.request("GET", "cache/a")[:3:2] == (200, content)
        assert server.request("PUT", "cache/b", content)[0] == 200  # its index row is still there: no upload
        assert server.request("GET", "cache/b")[:3:2] == (200, content)
        assert server.request("GET", "cache/a", headers={"Range": "bytes=10-19"})[:3:2] == (206, content[10:20])
    finally:
        cql.execute(cql.prepare(f"INSERT INTO {DATA_KS}.blocks (hash, size, codec, content) VALUES (?, ?, ?, ?)"),
                    (digest, row.size, row.codec, row.content))
    new = os.urandom(5000)
    assert server.request("PUT", "cache/a", new)[0] == 200
    assert server.request("GET", "cache/a")[2] == new
    assert server.request("DELETE", "cache/a")[0] == 200
    assert server.request("GET", "cache/a")[0] == 404


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


def test_a_new_key_over_1024_bytes_is_400_in_serve_and_exit_2_in_the_cli(server: Server, tmp_path: Path) -> None:
    """A 2,000-byte ID (under Cassandra's 64 KiB key limit, over the store's documented 1,024): a PUT is 400 and
    `casstor store` exit 2 with one line, nothing stored. Before the rule the PUT was stored (200), and an ID
    over 64 KiB was a 503 that clients retried for ever. Reading and removing it stay allowed (an ID stored
    before the rule must stay reachable): not stored, so 404 and exit 1, each one line."""
    key = "long/" + "k" * 1995
    status, _, body = server.request("PUT", key, b"x")
    assert status == 400 and b"2000 bytes" in body, (status, body)
    for method in ("GET", "HEAD", "DELETE"):
        assert server.request(method, key)[0] == 404, method
    source = tmp_path / "x.bin"
    source.write_bytes(b"x")
    for args, code in ((["store", str(source), key], 2), (["restore", key, str(tmp_path / "out")], 1),
                       (["stat", key], 1), (["rm", key], 1)):
        done = subprocess.run([*CASSTOR, *args], capture_output=True, timeout=120)
        lines = done.stderr.decode().splitlines()
        assert done.returncode == code and len(lines) == 1 and lines[0].startswith("casstor: "), (args, done)
    assert server.request("GET", "long/" + "k" * 1019)[0] == 404  # 1,024 bytes: a valid ID, just not stored


def test_identical_bodies_under_two_keys_upload_no_new_block(server: Server) -> None:
    """The dedup goal of issue 16: the second PUT of the same 1 MB body under another key sends no block."""
    content = os.urandom(1024 * 1024)
    first = json.loads(server.request("PUT", "dedup/one", content)[2])
    second = json.loads(server.request("PUT", "dedup/two", content)[2])
    assert first["new_bytes"] == len(content) and first["new_blocks"] == first["blocks"] > 1
    assert (second["new_blocks"], second["new_bytes"], second["blocks"]) == (0, 0, first["blocks"])
    assert server.request("GET", "dedup/two")[2] == content


def _until_no_writer(cql, timeout_s: float = 3 * LEASE_REUSE_S + 5) -> None:
    until_no_writer(cql, timeout_s)


def test_writes_share_one_lease_given_up_when_idle(server: Server, cql) -> None:
    _until_no_writer(cql)
    for index in range(3):
        assert server.request("PUT", f"lease/{index}", b"x")[0] == 200
    assert active_writers(cql) == 1  # one lease for the three writes
    _until_no_writer(cql)            # an idle server leaves no lease for an offline reclaim to wait for


def test_an_offline_reclaim_window_is_answered_503(server: Server, cql) -> None:
    assert server.request("PUT", "window/before", b"kept")[0] == 200
    _until_no_writer(cql)
    open_window(cql, "reclaim@test:1", WindowMode.OFFLINE)
    try:
        status, headers, body = server.request("PUT", "window/during", b"refused")
        assert (status, headers["retry-after"]) == (503, "5")
        assert b"reclaim" in body and b"again later" in body and b"Traceback" not in body
        assert server.request("DELETE", "window/before")[0] == 503
        assert server.request("GET", "window/before")[2] == b"kept"  # reads go on
    finally:
        clear_window(cql)
    assert server.request("PUT", "window/after", b"ok")[0] == 200


def test_token_and_read_only(cql, tmp_path: Path) -> None:
    token_file = secret_file(tmp_path / "token", "0600", "s3cret-token\n")  # only its owner may read it
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


def test_sigterm_lets_a_running_put_finish_fails_a_stalled_one_cleanly_and_gives_up_the_lease(cql) -> None:
    """SIGTERM with two PUTs in flight: one whose client goes on sending (it completes within the grace
    time: 200, stored), one whose client stalls after 5 MB and never ends (cancelled after the grace time:
    503, nothing stored, no claim left). The server exits 0, its lease gone, no traceback logged."""
    stopping = Server()
    finishing = PartialPut(stopping, "sigterm/finishes", 2 * MB)
    stalled = PartialPut(stopping, "sigterm/stalls", 20 * MB)
    finishing_body = os.urandom(2 * MB)
    finishing.send(finishing_body[:MB])
    stalled.send(os.urandom(5 * MB))
    time.sleep(1)  # both requests are being served
    assert active_writers(cql) >= 1
    stopping.terminate()
    time.sleep(1)
    finishing.send(finishing_body[MB:])
    status, body, _ = finishing.response()
    assert status == 200 and json.loads(body)["bytes"] == 2 * MB, body
    assert stalled.response()[0] == 503  # after the grace time
    code, log = stopping.wait(timeout_s=60)
    assert code == 0, log
    assert log.rstrip().endswith("casstor serve: stopped"), log
    assert "Traceback" not in log
    store = Store(cql)
    out = io.BytesIO()
    store.restore("sigterm/finishes", out)
    assert out.getvalue() == finishing_body
    assert not list(store.list("sigterm/stalls"))
    assert orphan_claims(cql) == []
    until_no_writer(cql, timeout_s=5)
