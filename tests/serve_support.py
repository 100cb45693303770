"""Clients of a real ``casstor serve`` for the tests: ``http.client``, ``curl``, and a PUT sent in parts.

Also the store-side checks the serve tests share: claims left behind, and
the block hashes of a body as the store would cut it.
"""

from __future__ import annotations

import http.client
import io
import socket
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from casstor_ops.serve.process import ServerProcess
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.coordination.leases import active_writers
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import read_settings

T = TypeVar("T")


class Server(ServerProcess):
    """A ``casstor serve`` process with a request helper (``http.client``, the key quoted as a client would)."""

    def request(self, method: str, key: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            connection.request(method, "/" + quote(key), body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def stop_cleanly(self) -> str:
        """Stop the server; it must exit 0 (its log is the message otherwise). Its log."""
        code, log = self.stop()
        assert code == 0, log
        return log


class PartialPut:
    """A PUT whose body the test sends in parts, on its own socket (to hold a request in flight)."""

    def __init__(self, server: ServerProcess, key: str, size: int | None,
                 headers: dict[str, str] | None = None) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=120)
        lines = [f"PUT /{quote(key)} HTTP/1.1", f"Host: {server.host}"]
        lines.append(f"Content-Length: {size}" if size is not None else "Transfer-Encoding: chunked")
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.chunked = size is None
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())

    def send(self, data: bytes) -> None:
        self.sock.sendall(b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data)

    def finish(self) -> tuple[int, bytes, dict[str, str]]:
        """End a chunked body (a sized one ends by itself); the status, body and headers of the response."""
        if self.chunked:
            self.sock.sendall(b"0\r\n\r\n")
        return self.response()

    def response(self) -> tuple[int, bytes, dict[str, str]]:
        response = http.client.HTTPResponse(self.sock)
        try:
            response.begin()
            return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
        finally:
            self.sock.close()

    def abandon(self) -> None:
        """Close the connection with the body unfinished."""
        self.sock.close()


def timed_request(host: str, port: int, method: str, path: str, body: bytes | None = None,
                  timeout_s: float = 120) -> tuple[int, float]:
    """One request on a connection of its own: its status and the seconds to its whole answer (a socket timeout
    past ``timeout_s``)."""
    started = time.monotonic()
    connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        connection.request(method, path, body=body)
        response = connection.getresponse()
        response.read()
        return response.status, time.monotonic() - started
    finally:
        connection.close()


def at_once(request: Callable[[int], T], count: int) -> list[T]:
    """``request(0)`` .. ``request(count - 1)``, each on a thread of its own, all started together; their answers
    in that order."""
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(request, range(count)))


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by openssl in ``folder``: what ``--cert``/``--key`` take
    and what a client trusts by its file (curl ``--cacert``, boto3 ``verify``, ``AWS_CA_BUNDLE``, rclone
    ``--ca-cert``)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", *args], capture_output=True, timeout=120)


def block_hashes(cql, content: bytes) -> list[bytes]:
    """The hashes of the blocks the store cuts ``content`` into."""
    return [block_hash(chunk) for chunk in chunks(io.BytesIO(content), read_settings(cql))]


def orphan_claims(cql) -> list[bytes]:
    """Claimed blocks with no index row: what a failed store must not leave (the claims of blocks it uploaded
    and indexed expire by themselves and hold nobody up)."""
    claims = [r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.block_claims")]
    indexed = {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")}
    return [h for h in claims if h not in indexed]


def until(condition, timeout_s: float, what: str) -> None:
    """Wait until ``condition()`` is true (polling), or fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def until_no_writer(cql, timeout_s: float) -> None:
    until(lambda: active_writers(cql) == 0, timeout_s, "the writer leases to be given up")


def writer_leases(cql) -> set:
    """The writers whose lease row is live now."""
    return {row.writer for row in cql.execute(f"SELECT writer FROM {META_KS}.writer_leases")}


def until_no_writer_but(cql, kept: set, timeout_s: float) -> None:
    """Wait until every live writer lease is one of ``kept`` (another server's, still running)."""
    until(lambda: writer_leases(cql) <= kept, timeout_s, "the writer leases to be given up")
