"""``casstor serve``'s handlers without a node: the ASGI app called directly, on a store whose every call fails.

What the integration tests cannot cause on the shared node: Cassandra
unreachable or timing out at request time (503 with Retry-After), and a bug
(500 with no detail for the client); plus the checks that come before any
store call (token, method, read-only).
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import unquote

import pytest
from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable

from casstor_ops.serve.app import Handlers, Policy, build_app
from casstor_ops.serve.auth import Token
from casstor_ops.serve.content_cache import ContentCache
from casstor_ops.serve.metrics import Metrics
from casstor_ops.serve.shared_lease import SharedLease


class _FailingStore:
    """Stands in for a Store whose every call fails with ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.callbacks = self  # its non-blocking calls fail the same way

    def stat(self, file_id: str):
        raise self.error

    def stat_async(self, file_id: str, done, version=None, at=None) -> None:
        done(None, self.error)  # as the driver's errback would


METRICS_PORT = 9100


def _request(handlers: Handlers, method: str, path: str, headers: dict[str, str] | None = None,
             port: int = 8080) -> tuple[int, dict[str, str], bytes]:
    """One request through the ASGI app (received on ``port``): status, headers, body."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": unquote(path), "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", port),
             "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]}
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(build_app(handlers, METRICS_PORT)(scope, receive, send))
    start = sent[0]
    return (start["status"], {k.decode(): v.decode() for k, v in start["headers"]},
            b"".join(m.get("body", b"") for m in sent[1:]))


@pytest.fixture()
def make_handlers():
    made: list[tuple[Handlers, SharedLease]] = []

    def make(error: BaseException, token: Token | None = None, read_only: bool = False,
             **limits: object) -> Handlers:
        leases = SharedLease(session=None)  # no write reaches it: it never touches the session
        handlers = Handlers(_FailingStore(error), leases, Policy(token, read_only, **limits), Metrics(),
                            ContentCache(0, 0))
        made.append((handlers, leases))
        return handlers

    yield make
    for handlers, leases in made:
        handlers.close()
        leases.close()


@pytest.mark.parametrize("error", [
    NoHostAvailable("Unable to connect to any servers", {"127.0.0.1:9042": ConnectionRefusedError(111, "refused")}),
    OperationTimedOut("errors={'127.0.0.1:9042': 'Client request timeout'}, last_host=127.0.0.1:9042")])
def test_cassandra_unreachable_or_slow_is_503_with_retry_after(make_handlers, caplog, error) -> None:
    """Injects the driver's errors, whose text names the node's address; checks the 503 body says what to do
    and not the driver's text (no address reaches the client: it did before the fix), the log line has it."""
    with caplog.at_level(logging.WARNING, logger="casstor.serve"):
        status, headers, body = _request(make_handlers(error), "GET", "/photos/a%20b.jpg")
    assert (status, headers["retry-after"]) == (503, "5")
    assert body.count(b"\n") == 1 and b"Traceback" not in body
    assert b"again later" in body and b"127.0.0" not in body
    assert [r.getMessage() for r in caplog.records] == [f"GET 'photos/a b.jpg' -> 503: {' '.join(str(error).split())}"]
    assert "127.0.0.1:9042" in caplog.records[0].getMessage()


def test_a_bug_is_500_without_detail_for_the_client(make_handlers, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="casstor.serve"):
        status, _, body = _request(make_handlers(KeyError("secret internals")), "HEAD", "/a")
    assert (status, body) == (500, b"internal error\n")
    assert len(caplog.records) == 1 and "KeyError" in caplog.records[0].getMessage()


def test_the_token_and_the_method_are_checked_before_the_store(make_handlers) -> None:
    guarded = make_handlers(RuntimeError("the store must not be called"), Token(b"t0ken"), read_only=True)
    status, headers, _ = _request(guarded, "GET", "/a")
    assert (status, headers["www-authenticate"]) == (401, "Bearer")
    good = {"Authorization": "Bearer t0ken"}
    for method in ("PUT", "DELETE", "POST"):
        status, headers, _ = _request(guarded, method, "/a", good)
        assert (status, headers["allow"]) == (405, "GET, HEAD"), method
    assert _request(make_handlers(RuntimeError("unused")), "PATCH", "/a")[1]["allow"] == "GET, HEAD, PUT, DELETE"


def test_every_refused_put_closes_its_connection_and_every_refusal_logs_one_line(make_handlers, caplog) -> None:
    """A PUT refused before its body is read (401, 405 on either port) must close the connection, or the server
    reads and throws away the whole body; each refusal, 404 on the metrics port included, is one log line."""
    guarded = make_handlers(RuntimeError("the store must not be called"), Token(b"t0ken"), read_only=True)
    good = {"Authorization": "Bearer t0ken", "Content-Length": "5"}
    with caplog.at_level(logging.WARNING, logger="casstor.serve"):
        answers = [_request(guarded, "PUT", "/a", {"Content-Length": "5"}), _request(guarded, "PUT", "/a", good),
                   _request(guarded, "PUT", "/metrics", good, port=METRICS_PORT)]
        assert _request(guarded, "GET", "/other", good, port=METRICS_PORT)[0] == 404
    assert [(status, headers.get("connection")) for status, headers, _ in answers] == [
        (401, "close"), (405, "close"), (405, "close")]
    assert [r.getMessage() for r in caplog.records] == [
        "PUT b'/a' -> 401: no or wrong bearer token", "PUT b'/a' -> 405: allowed here: GET, HEAD",
        "PUT b'/metrics' -> 405: allowed here: GET, HEAD", "GET b'/other' -> 404 on the metrics port"]


def test_a_bad_key_is_400_before_the_store(make_handlers) -> None:
    status, _, body = _request(make_handlers(RuntimeError("the store must not be called")), "GET", "/a%00b")
    assert status == 400 and b"NUL" in body


def test_the_body_limits_answer_before_the_store_and_close_the_connection(make_handlers) -> None:
    limited = make_handlers(RuntimeError("the store must not be called"), max_body=10, require_length=True)
    status, headers, body = _request(limited, "PUT", "/a", {"Content-Length": "11"})
    assert (status, headers["connection"]) == (413, "close") and b"10 bytes" in body
    status, _, body = _request(limited, "PUT", "/a")  # no Content-Length: a chunked body
    assert status == 411 and b"Content-Length" in body


def test_metrics_are_on_their_own_port_behind_the_token(make_handlers) -> None:
    guarded = make_handlers(RuntimeError("the store must not be called"), Token(b"t0ken"))
    assert _request(guarded, "GET", "/metrics", port=METRICS_PORT)[0] == 401
    good = {"Authorization": "Bearer t0ken"}
    status, headers, body = _request(guarded, "GET", "/metrics", good, port=METRICS_PORT)
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    assert b'casstor_serve_errors_total{kind="unauthorized"} 1' in body
    assert _request(guarded, "GET", "/other", good, port=METRICS_PORT)[0] == 404
    assert _request(guarded, "PUT", "/metrics", good, port=METRICS_PORT)[0] == 405
    # On the files port, /metrics is the file 'metrics' (here: the store is asked, and fails).
    assert _request(guarded, "GET", "/metrics", good)[0] == 500
