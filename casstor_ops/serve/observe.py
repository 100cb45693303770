"""Each request measured once: its status, bytes each way and latency, into the metrics and the access log.

:func:`observed` wraps the ASGI application: it counts the body bytes the
application receives and sends, takes the status from the response start,
and when the application returns records the request in the worker's
:class:`~casstor_ops.serve.metrics.Recorder` and, with ``--access-log``,
logs one line::

    casstor serve: 127.0.0.1:50412 "PUT /photos/a%20b.jpg" 200 in=65536 out=131 12.4ms

The path is the raw one the client sent (percent-encoded, so a key never
breaks the line). The access log is off by default: one log line per
request costs throughput (``docs/serve.md`` has the measurement).

Example::

    >>> app = observed(build_app(handlers), metrics.recorder(0), access_log=True)   # doctest: +SKIP

Failures: none of its own; an error the application raises is recorded
(status 500 if no response had started) and re-raised.
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from casstor_ops.serve.metrics import Recorder

log = logging.getLogger("casstor.serve")


def observed(app: ASGIApp, recorder: Recorder, access_log: bool) -> ASGIApp:
    """``app``, with every HTTP request counted in ``recorder`` (and logged, with ``access_log``)."""
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        started = time.perf_counter()
        status, received, sent = 500, 0, 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            return message

        async def counting_send(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
            else:
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await app(scope, counting_receive, counting_send)
        finally:
            seconds = time.perf_counter() - started
            recorder.request(scope["method"], status, received, sent, seconds)
            if access_log:
                client = scope.get("client") or ("-", 0)
                path = scope["raw_path"].decode("ascii", "backslashreplace")
                log.info('%s:%s "%s %s" %d in=%d out=%d %.1fms', client[0], client[1], scope["method"], path,
                         status, received, sent, seconds * 1000)

    return wrapped
