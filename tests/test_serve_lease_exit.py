"""A server worker whose writer lease takes long to end (as with its node frozen) still answers GET, HEAD and /metrics.

The server runs in this process (uvicorn on a thread, the real handlers, a
real Store on the test node) so that the test can hook two class
boundaries: the writer lease's end (``WriterLease.__exit__``, which joins its
heartbeat and deletes its row, the driver's request timeout with a frozen
node) waits for an Event, and an inline PUT's write starts only when the test
lets it. The database, the HTTP server and the client are real.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from casstor_ops.serve import shared_lease
from casstor_ops.serve.app import Handlers, Policy, build_app
from casstor_ops.serve.content_cache import ContentCache
from casstor_ops.serve.metrics import Metrics
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.leases import WriterLease

from .serve_support import timed_request
from .support import INLINE_MAX

REUSE_S = 2.0
NORMAL_S = 3.0     # a GET on a loaded 2-core machine; milliseconds when idle
HELD_S = 20.0      # how long the lease's end is held at most


class _Gates:
    """The test's two hooks: the lease's end waits for ``end``; an inline PUT's write starts after ``write``."""

    def __init__(self) -> None:
        self.end, self.write = threading.Event(), threading.Event()
        self.ending = threading.Event()


@pytest.fixture()
def served(inline_store, monkeypatch) -> Iterator[tuple[tuple[str, int, int], _Gates]]:
    """An in-process server on the inline store with the hooks of :class:`_Gates`: (host, port, metrics port)."""
    gates = _Gates()

    class SlowEnd(WriterLease):
        def __exit__(self, *exc: object) -> None:
            gates.ending.set()
            gates.end.wait(HELD_S)
            super().__exit__(*exc)

    monkeypatch.setattr(shared_lease, "WriterLease", SlowEnd)
    with Store.open() as store:
        real_write = store.callbacks.put_inline_async

        def held_write(*args: object) -> None:
            threading.Thread(target=lambda: gates.write.wait(HELD_S) and real_write(*args)).start()

        monkeypatch.setattr(store.callbacks, "put_inline_async", held_write)
        leases = shared_lease.SharedLease(store.session, REUSE_S)
        handlers = Handlers(store, leases, Policy(), Metrics(), ContentCache(1 << 24, 1 << 20))
        sockets = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
        ports = [s.getsockname()[1] for s in sockets]
        server = uvicorn.Server(uvicorn.Config(build_app(handlers, ports[1]), log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": sockets})
        thread.start()
        try:
            yield ("127.0.0.1", *ports), gates
        finally:
            gates.end.set(), gates.write.set()
            server.should_exit = True
            thread.join(30)
            handlers.close()
            leases.close()


def test_a_lease_slow_to_end_never_stops_the_event_loop(served) -> None:
    """Injects: an inline PUT holding the shared lease while it goes stale and is retired, so that this PUT, on
    the event loop, is its last holder; the lease's end then blocks (as a row delete with the node frozen).
    Checks: a GET, a HEAD and /metrics are answered within their normal latency meanwhile, the inline PUT
    answers 200, and the lease is ended once its end may go on. Before the fix the event loop itself ended the
    lease: nothing was answered until the end returned (here up to 20 s)."""
    (host, port, metrics_port), gates = served
    assert timed_request(host, port, "PUT", "/kept", os.urandom(4 * INLINE_MAX))[0] == 200  # a worker takes the lease
    inline = threading.Thread(target=lambda: results.append(timed_request(host, port, "PUT", "/inline", b"small")))
    results: list[tuple[int, float]] = []
    inline.start()  # borrows the lease at once, its write held
    time.sleep(REUSE_S + 1.5)  # the lease goes stale and the reaper retires it, still held by the inline PUT
    gates.write.set()
    time.sleep(0.5)  # the inline PUT is answered and gives the lease back
    for method, wanted_port, path in [("GET", port, "/kept"), ("HEAD", port, "/kept"), ("GET", metrics_port,
                                                                                      "/metrics")]:
        status, seconds = timed_request(host, wanted_port, method, path, timeout_s=HELD_S)
        assert status == 200 and seconds < NORMAL_S, (method, path, status, seconds)
    assert gates.ending.is_set()  # the lease's end was under way (and held) all that time
    gates.end.set()
    inline.join(HELD_S)
    assert [status for status, _ in results] == [200]
