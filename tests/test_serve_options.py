"""``casstor serve``'s options and conditional writes, against real server processes and the real node.

* PUT and DELETE preconditions (``If-Match``, ``If-None-Match: *``) and the ETag of a PUT;
* ``--max-body`` (413) and ``--require-length`` (411);
* ``--cert/--key`` (TLS, with a certificate made by openssl in the test, curl ``--cacert``);
* ``--workers``, ``--metrics-port`` (Prometheus text) and ``--access-log``;
* ``--token-file`` only when only its owner may read it.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serve_support import (PartialPut, Server, at_once, curl, orphan_claims, self_signed_certificate,
                            until_no_writer_but, writer_leases)
from .support import run_casstor, secret_file

MB = 1_000_000
MAX_BODY = 6 * MB  # past the store's first 4 MiB segment


@pytest.fixture(scope="module")
def limited(cql) -> Iterator[Server]:
    """A server with a body limit, metrics and the access log. Its writes keep no lease between them
    (``--lease-reuse 0``): a lease it kept idle for the default 10 s would still be live when a later test of
    this module checks that a stopped server left none."""
    running = Server("--max-body", str(MAX_BODY), "--metrics-port", "0", "--access-log", "--lease-reuse", "0")
    yield running
    code, log = running.stop()
    assert code == 0, log


def _metrics(server: Server, headers: dict[str, str] | None = None) -> dict[str, float]:
    request = urllib.request.Request(f"{server.scheme}://{server.host}:{server.metrics_port}/metrics",
                                     headers=headers or {})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def test_a_put_answers_the_new_etag_and_a_stale_if_match_is_412_before_the_body(limited: Server) -> None:
    status, headers, _ = limited.request("PUT", "cond/a", b"one")
    first = headers["etag"]
    assert status == 200 and first == limited.request("HEAD", "cond/a")[1]["etag"]
    status, headers, _ = limited.request("PUT", "cond/a", b"two", {"If-Match": first})
    assert status == 200 and headers["etag"] != first
    status, headers, body = limited.request("PUT", "cond/a", b"three", {"If-Match": first})
    assert (status, headers["connection"]) == (412, "close") and b"precondition failed" in body
    assert limited.request("GET", "cond/a")[2] == b"two"
    assert limited.request("PUT", "cond/new", b"x", {"If-Match": "*"})[0] == 412  # * needs an existing file
    assert limited.request("PUT", "cond/new", b"x", {"If-None-Match": "*"})[0] == 200  # create only
    assert limited.request("PUT", "cond/new", b"y", {"If-None-Match": "*"})[0] == 412
    assert limited.request("GET", "cond/new")[2] == b"x"
    # A 412 answered before the body: the server did not read the 1 MB announced (curl would wait for 100).
    partial = PartialPut(limited, "cond/a", MB, {"If-Match": first})
    assert partial.response()[0] == 412


def test_a_delete_honours_if_match_and_if_none_match(limited: Server) -> None:
    """A DELETE naming the version its client saw (v1) after another client wrote v2 must not remove v2 (a lost
    update): 412 and v2 still there; naming v2's ETag removes it; ``If-None-Match: *`` on an existing key is
    412. Before the fix the DELETE ignored both headers and removed v2."""
    v1 = limited.request("PUT", "cond/del", b"v1")[1]["etag"]
    v2 = limited.request("PUT", "cond/del", b"v2")[1]["etag"]
    status, _, body = limited.request("DELETE", "cond/del", headers={"If-Match": v1})
    assert status == 412 and b"precondition failed" in body
    assert limited.request("DELETE", "cond/del", headers={"If-None-Match": "*"})[0] == 412
    assert limited.request("GET", "cond/del")[2] == b"v2"
    assert limited.request("DELETE", "cond/del", headers={"If-Match": v2})[0] == 200
    assert limited.request("GET", "cond/del")[0] == 404


def test_if_match_is_checked_again_just_before_the_head_write(limited: Server, cql) -> None:
    """Injects an overwrite while a conditional PUT's body is still arriving: its first check passed (the
    ETag was current), the second one, just before its head write, finds the head moved: 412, the
    overwrite stays, and the conditional PUT's claims are released."""
    etag = limited.request("PUT", "cond/moved", b"base")[1]["etag"]
    slow = PartialPut(limited, "cond/moved", 2 * MB, {"If-Match": etag})
    slow.send(os.urandom(MB))
    time.sleep(1)  # its first check is done: it is reading the body
    assert limited.request("PUT", "cond/moved", b"overwrite")[0] == 200
    slow.send(os.urandom(MB))
    status, body, _ = slow.response()
    assert status == 412, body
    assert limited.request("GET", "cond/moved")[2] == b"overwrite"
    assert orphan_claims(cql) == []


def test_of_two_conditional_puts_naming_the_same_etag_one_wins(limited: Server) -> None:
    """Both bodies arrive whole, then both PUTs reach their head write at once: the server's per-key lock
    makes the second check see the first head (412), where both would otherwise overwrite."""
    etag = limited.request("PUT", "cond/race", b"base")[1]["etag"]
    bodies = [os.urandom(300_000), os.urandom(300_000)]
    puts = [PartialPut(limited, "cond/race", len(body), {"If-Match": etag}) for body in bodies]
    for put, body in zip(puts, bodies):
        put.send(body[:-1])
    time.sleep(1)

    def finish(index: int) -> int:
        puts[index].send(bodies[index][-1:])
        return puts[index].response()[0]

    statuses = at_once(finish, 2)
    assert sorted(statuses) == [200, 412]
    assert limited.request("GET", "cond/race")[2] == bodies[statuses.index(200)]


def test_a_body_over_max_body_is_413_and_stores_nothing(limited: Server, cql) -> None:
    """By its Content-Length: refused before a byte is read. Chunked (no length): refused when it grows past
    the limit (after the store read and chunked its first segment); nothing is committed, no claim is left
    on a block without an index row."""
    status, body, headers = PartialPut(limited, "limit/sized", MAX_BODY + 1).response()  # no byte of it sent
    assert (status, headers["connection"]) == (413, "close") and str(MAX_BODY).encode() in body
    chunked = PartialPut(limited, "limit/chunked", None)
    try:
        for _ in range(MAX_BODY // MB + 1):
            chunked.send(os.urandom(MB))
        status = chunked.finish()[0]
    except (BrokenPipeError, ConnectionResetError):  # the server answered and closed while we were sending
        status = chunked.response()[0]
    assert status == 413
    assert limited.request("GET", "limit/chunked")[0] == 404
    assert limited.request("GET", "limit/sized")[0] == 404
    assert orphan_claims(cql) == []
    assert limited.request("PUT", "limit/exact", os.urandom(MAX_BODY))[0] == 200  # the limit itself is allowed


def test_metrics_count_what_was_served_and_the_access_log_has_one_line_each(limited: Server) -> None:
    before = _metrics(limited)
    assert limited.request("PUT", "metrics", b"a file named metrics")[0] == 200  # the key stays a file
    assert limited.request("GET", "metrics")[2] == b"a file named metrics"
    assert limited.request("GET", "metrics")[2] == b"a file named metrics"  # from the content cache
    assert limited.request("GET", "no/such")[0] == 404
    after = _metrics(limited)

    def grew(series: str) -> float:
        return after[series] - before.get(series, 0)

    assert grew('casstor_serve_requests_total{method="PUT",status="2xx"}') == 1
    assert grew('casstor_serve_requests_total{method="GET",status="2xx"}') == 3  # and the first scrape
    assert (grew("casstor_serve_cache_misses_total"), grew("casstor_serve_cache_hits_total")) == (1, 1)
    assert grew('casstor_serve_requests_total{method="GET",status="4xx"}') == 1
    assert grew('casstor_serve_errors_total{kind="not_found"}') == 1
    assert grew("casstor_serve_received_bytes_total") == len(b"a file named metrics")
    assert grew('casstor_serve_request_duration_seconds_count{method="PUT"}') == 1
    assert re.search(r'127\.0\.0\.1:\d+ "GET /metrics" 200 in=0 out=20 [0-9.]+ms', limited.log), limited.log


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


def test_tls_workers_and_required_length(cql, certificate: tuple[Path, Path], tmp_path: Path) -> None:
    """Two worker processes serving HTTPS with --require-length: curl trusts the server only with --cacert,
    plain HTTP is refused, a chunked PUT is 411, and /metrics (also HTTPS) counts the requests of both
    workers. SIGTERM stops both; no lease is left."""
    cert, key = certificate
    kept = writer_leases(cql)  # the module's other server may hold its idle lease up to 10 s more
    server = Server("--cert", str(cert), "--key", str(key), "--workers", "2", "--require-length",
                    "--metrics-port", "0")
    try:
        assert server.scheme == "https" and "2 workers" in server.log
        source = tmp_path / "body.bin"
        source.write_bytes(os.urandom(200_000))
        put = curl("--cacert", str(cert), "-T", str(source), server.url("tls/body.bin"))
        assert put.returncode == 0 and json.loads(put.stdout)["bytes"] == 200_000, put
        for _ in range(6):  # new connections: the kernel spreads them over the workers
            got = curl("--cacert", str(cert), server.url("tls/body.bin"))
            assert got.stdout == source.read_bytes()
        assert curl(server.url("tls/body.bin")).returncode != 0  # an untrusted certificate
        assert curl(server.url("tls/body.bin").replace("https", "http")).stdout == b""
        chunked = curl("--cacert", str(cert), "-H", "Transfer-Encoding: chunked", "-T", "-", "-o", "/dev/null",
                       "-w", "%{http_code}", server.url("tls/chunked"))
        assert chunked.stdout == b"411"
        metrics = curl("--cacert", str(cert), f"https://127.0.0.1:{server.metrics_port}/metrics").stdout.decode()
        assert 'casstor_serve_requests_total{method="GET",status="2xx"} 6' in metrics
        assert "casstor_serve_workers 2" in metrics
    finally:
        code, log = server.stop()
    assert code == 0, log
    assert log.rstrip().endswith("casstor serve: stopped") and "Traceback" not in log
    until_no_writer_but(cql, kept, timeout_s=5)


def test_a_bad_certificate_is_one_line_and_exit_2(cql, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate\n")
    with pytest.raises(Exception) as caught:
        Server("--cert", str(bogus), start_timeout_s=60)
    assert "casstor: cannot load the TLS certificate" in str(caught.value)


@pytest.mark.parametrize("kind", ["0644", "directory", "fifo"])
def test_a_token_file_others_may_read_or_not_a_file_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    """Injects a world-readable token file, a directory and a FIFO as ``--token-file``; checks `casstor serve`
    exits 2 with one line naming the option before it connects (to a port where nothing listens, so no node is
    started either way). Without the check the 0644 file went on to connect (exit 1) and the FIFO waited for a
    writer (the 60 s timeout); a 0600 file is served in test_serve.py::test_token_and_read_only."""
    path = secret_file(tmp_path / "token", kind)
    run = run_casstor("serve", "--port", "0", "--token-file", str(path), env={"CASSTOR_NODES": "127.0.0.1:1"},
                      timeout=60)
    assert run.returncode == 2 and run.stdout == b"", run.stderr
    lines = run.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"casstor: --token-file={path}: "), lines
