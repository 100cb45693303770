"""The request-header deadline: a connection whose request line and headers have not all arrived in time is closed.

uvicorn bounds the wait between two requests of a connection
(``timeout_keep_alive``) but not the time a client takes to send one
request's headers: a client sending a byte a second holds its connection
(and, over many connections, the server's file descriptors) for ever.
:class:`HeaderDeadline` is uvicorn's httptools protocol with a timer armed
when a connection opens and whenever a request begins, disarmed once its
headers are complete; when it fires, the client gets a 408 and the
connection is closed (nothing of the request reached the handlers). The
body's own deadline is :class:`~casstor_ops.serve.streams.BodyReader`'s.

Example::

    >>> config = uvicorn.Config(app, http=partial(HeaderDeadline, header_timeout_s=30))  # doctest: +SKIP

Failures: none raised; each closed connection is one log line (the client's
address, no byte of what it sent).
"""

from __future__ import annotations

import asyncio
import logging

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from casstor_ops.serve.policy import HEADER_TIMEOUT_S

log = logging.getLogger("casstor.serve")

_LATE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 43\r\n"
         b"connection: close\r\n\r\nthe request headers did not arrive in time\n")


class HeaderDeadline(HttpToolsProtocol):
    """uvicorn's httptools protocol whose requests must have sent their headers within ``header_timeout_s``."""

    def __init__(self, *args: object, header_timeout_s: float = HEADER_TIMEOUT_S, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout_s = header_timeout_s
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self._header_timeout_s, self._late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        log.warning("%s: request headers not complete within %g s: connection closed", _peer(self.client),
                    self._header_timeout_s)
        self.transport.write(_LATE)
        self.transport.close()


def _peer(client: tuple[str, int] | None) -> str:
    return "%s:%d" % client if client else "a client"
