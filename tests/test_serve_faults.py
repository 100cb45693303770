"""``casstor serve`` while its one Cassandra node is frozen, and while it is stopped and started again.

One real node of its own (``SERVE_FAULT_PORTS``), made a store with
``casstor init --inline-max`` as a user would, and one real ``casstor serve``
on it for the module, so that the injected faults reach no other test.
Faults:

* the node's JVM frozen with SIGSTOP (its connections stay open, nothing
  answers: every request times out), then thawed with SIGCONT;
* the node stopped (connections refused), then started again on its data.

Each test checks that every request meanwhile is answered 503 with
``Retry-After`` and one log line (no traceback, no 500), that the server
serves again once the node is back without being restarted, and that every
file reads back whole as one of the versions sent. Marked ``slow``
(``make test-all``): a node of its own, and each frozen request waits for
the driver's request timeout.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from casstor_ops.cluster.connection import REQUEST_TIMEOUT_S, connect
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.serve.validators import etag
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.cql.keyspaces import META_KS

from .serve_support import Server, at_once, until
from .support import INLINE_MAX, SERVE_FAULT_PORTS, run_casstor

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

SMALL = INLINE_MAX // 2      # kept inline: the server commits it on the driver's callbacks (its fast path)
LARGE = 3 * INLINE_MAX       # one block (under the default chunk minimum), not inline: the worker thread's path
# A request the node never answers fails after the driver's timeout; the store tries a write again, and a
# write waits for the writer lease, which is taken and renewed by requests that time out as well.
ANSWER_BOUND_S = 6 * REQUEST_TIMEOUT_S
BACK_BOUND_S = 120           # the driver reconnects at most 10 s apart; a lease is taken again at once


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory):
    """One node on its own ports, initialised through the CLI with ``--inline-max``; the environment of this
    module's processes names it."""
    home = tmp_path_factory.mktemp("serve-faults")
    cluster = LocalCluster(home / "cluster", ports=SERVE_FAULT_PORTS, heap_mb=768)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CASSTOR_HOME", str(home))
        env.setenv("CASSTOR_NODES", cluster.contact_points[0])
        env.setenv("CASSTOR_PORT", str(SERVE_FAULT_PORTS.cql))
        cluster.start(nodes=1)
        try:
            init = run_casstor("init", "--inline-max", str(INLINE_MAX))
            assert init.returncode == 0, init.stderr.decode()
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture(scope="module")
def server(node: LocalCluster):
    served = Server()
    yield served
    code, log = served.stop(timeout_s=ANSWER_BOUND_S)
    assert code == 0, log


@pytest.fixture(scope="module")
def session(node: LocalCluster):
    session = connect(start=False)
    yield session
    session.cluster.shutdown()


def test_init_with_inline_max_makes_a_store_that_keeps_small_files_in_their_heads(server: Server, session) -> None:
    """What the CLI's ``--inline-max`` records on a new store decides how the server keeps each file."""
    small, large = os.urandom(SMALL), os.urandom(LARGE)
    assert server.request("PUT", "kept/small", small)[0] == 200
    assert server.request("PUT", "kept/large", large)[0] == 200
    heads = {row.id: row for row in session.execute(f"SELECT id, blocks, content FROM {META_KS}.versions "
                                                "WHERE id IN ('kept/small', 'kept/large') PER PARTITION LIMIT 1")}
    assert (heads["kept/small"].blocks, heads["kept/small"].content is not None) == (0, True)
    assert heads["kept/large"].blocks >= 1 and heads["kept/large"].content is None
    assert server.request("GET", "kept/small")[2] == small
    assert server.request("GET", "kept/large")[2] == large


def _two_versions(server: Server) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """A first and a second body for each key, a small (inline) one and a large one; the first ones stored."""
    first = {"small": os.urandom(SMALL), "large": os.urandom(LARGE)}
    second = {"small": os.urandom(SMALL), "large": os.urandom(LARGE)}
    for key, body in first.items():
        assert server.request("PUT", key, body)[0] == 200
    return first, second


def _during_the_fault(server: Server, first: dict[str, bytes], second: dict[str, bytes]) -> dict[tuple, float]:
    """Send a PUT of each ``second`` body and a GET of each key at once; every one must be 503 with
    Retry-After within the bound. The seconds each took to be answered, by (method, key)."""
    requests = [("PUT", key, body) for key, body in second.items()] + [("GET", key, None) for key in first]

    def timed(method: str, key: str, body: bytes | None) -> tuple[float, tuple]:
        started = time.monotonic()
        answer = server.request(method, key, body)
        return time.monotonic() - started, answer

    answers = at_once(lambda n: timed(*requests[n]), len(requests))
    for (method, key, _), (seconds, (status, headers, body)) in zip(requests, answers):
        assert (status, headers.get("retry-after")) == (503, "5"), (method, key, status, body)
        assert b"again later" in body and b"127.0.0" not in body, body  # no driver text, no node address
        assert seconds < ANSWER_BOUND_S, (method, key, seconds)
    return {(method, key): seconds for (method, key, _), (seconds, _) in zip(requests, answers)}


def _served_again(server: Server, first: dict[str, bytes], second: dict[str, bytes]) -> None:
    """The server answers again with no restart; each key reads back whole as its first or second body (a
    PUT answered 503 may still have been applied by the node), with the ETag of what it read."""
    until(lambda: server.request("PUT", "after/probe", b"back")[0] == 200, BACK_BOUND_S, "a PUT to succeed")
    for key in first:
        status, headers, body = server.request("GET", key)
        assert status == 200 and body in (first[key], second[key]), (key, status, len(body))
        assert headers["etag"] == etag(file_hash([block_hash(body)]))
    third = os.urandom(SMALL)
    assert server.request("PUT", "small", third)[0] == 200
    assert server.request("GET", "small")[2] == third


def _no_traceback_and_each_503_logged(server: Server, expected: int) -> None:
    lines = server.log.splitlines()
    assert not [line for line in lines if "Traceback" in line or "-> 500" in line], server.log[-3000:]
    assert len([line for line in lines if "-> 503" in line]) >= expected, server.log[-3000:]


def test_a_frozen_node_is_503_then_served_again(node: LocalCluster, server: Server) -> None:
    """Injects: SIGSTOP of the node's JVM while the server is idle with a live lease (after two PUTs), then
    a small (inline, on the event loop) PUT, a large (worker thread) PUT and two GETs; then SIGCONT.
    Checks: each of the four is 503 with Retry-After, logged in one line, never 500 or a traceback, the
    inline PUT within one request timeout (it waited two before the fix in ``Writes._put_inline``); once thawed
    the server stores and reads again unrestarted, and both files read whole as an old or new version."""
    first, second = _two_versions(server)
    pid = node.node(1).pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        seconds = _during_the_fault(server, first, second)
    finally:
        os.kill(pid, signal.SIGCONT)
    # One request's timeout, not two: the inline PUT's unanswered write is not tried again on a worker thread.
    assert seconds["PUT", "small"] < 1.5 * REQUEST_TIMEOUT_S, seconds
    _served_again(server, first, second)
    _no_traceback_and_each_503_logged(server, expected=4)


def test_a_stopped_node_is_503_then_served_again_after_its_restart(node: LocalCluster, server: Server) -> None:
    """Injects: the node stopped (its port closed) under a running server, then started again on its data.
    Checks: PUTs of both kinds and GETs meanwhile are 503 with Retry-After, never 500; after the restart the
    server serves again unrestarted, and the files read whole as an old or new version."""
    first, second = _two_versions(server)
    node.stop(log=lambda line: None)
    try:
        _during_the_fault(server, first, second)
    finally:
        node.start(nodes=1, log=lambda line: None)
    _served_again(server, first, second)
    _no_traceback_and_each_503_logged(server, expected=4)
