"""The driver's libev connection, busy by the bytes it has queued, sending them in larger writes, timing requests
out without keeping them alive.

The driver's libev connection marks itself busy when a send meets a full
socket buffer and then refuses every new request (``ConnectionBusy``,
wrapped in ``NoHostAvailable``) until its *whole* send queue has drained; it
sends that queue in 4 KiB pieces, each a ``send`` that gives up and takes
back the GIL, which the store's hashing and compressing threads hold in
turn. With 64 KiB blocks the queue stayed short. With the default chunker's
~300 KiB blocks (up to 1 MiB) four files stored at once by one process
(``casstor store DIR``) kept megabytes queued: the store of Django's four
release tars took 1.3-16.8 s instead of 1.3, and one run in five failed a
file, on a request refused for the 10 s the request queue waits out a busy
connection or on a read sent directly, which has no such wait.

:class:`QueuedLibevConnection` is busy only while ``QUEUE_LIMIT_BYTES`` or
more wait in its queue, and sends the queue in pieces of
``SEND_PIECE_BYTES``. The limit is a backstop above what one store keeps in
flight (its request queue, and at most 96 MiB of blocks held,
``store.upload.MAX_HELD_BYTES``), so a store's own direct requests (its
lease heartbeat, head reads and writes) never meet it: an 8 MiB limit was
tried and failed a one-file store of raw 1 MiB blocks that way. It bounds
what a head write can wait behind when several uploads share a connection
(``casstor serve``); a head write acknowledged that late checks its blocks
again (step 4 of :mod:`casstor_ops.store.engine.commit`), so online reclaim's
safety does not rest on the limit. (The driver's own flag
bounded nothing there: with the node stopped, 56 MiB queued while it still
read "writable", since it changes only when a send meets a full socket.)
Measured on that tree store, ten runs each: 1.2-1.4 s every time, no
failure; with 48 KiB blocks 1.5-1.8 s (was 1.7-2.3 s).

Each request's timeout is a timer of the connection class (``create_timer``)
that the driver gives the request's own bound method (``_on_timeout``) and
the request keeps, as its ``_timer``, after it is answered: every answered
request was a reference cycle, freed only by Python's cyclic garbage
collector, with its message and the values it was sent with (a block's
content). :meth:`QueuedLibevConnection.create_timer` holds a bound method
weakly instead. A request in flight is held by its connection until it is
answered (the driver's table of streams), so its timer still fires; an
answered one is freed by its reference count as soon as its caller lets go.

Example::

    >>> Cluster(["127.0.0.1"], connection_class=QueuedLibevConnection)     # doctest: +SKIP

Failures: as the driver's connection (a broken socket makes it defunct and
fails its requests); ``ConnectionBusy`` while the queue is at its limit. A
timer whose request is gone does nothing.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable

from cassandra.connection import Timer
from cassandra.io.libevreactor import LibevConnection

SEND_PIECE_BYTES = 256 * 1024  # the driver's is 4 KiB; a larger piece only costs a copy of what a send leaves
QUEUE_LIMIT_BYTES = 128 * 1024 * 1024


class QueuedLibevConnection(LibevConnection):
    """A libev connection that refuses new requests only while ``QUEUE_LIMIT_BYTES`` wait to be sent, and whose
    timers hold a request weakly."""

    out_buffer_size = SEND_PIECE_BYTES

    # The driver reads this flag before each request and sets it when a send would block; here it is computed
    # from the queue instead (the reactor's write watcher follows the queue, not the flag).
    @property
    def _socket_writable(self) -> bool:
        with self._deque_lock:
            return sum(map(len, self.deque)) < QUEUE_LIMIT_BYTES

    @_socket_writable.setter
    def _socket_writable(self, _value: bool) -> None:
        pass

    @classmethod
    def create_timer(cls, timeout: float, callback: Callable[[], None]) -> Timer:
        """The driver's timer of ``callback`` after ``timeout`` seconds, holding a bound method's object weakly."""
        return super().create_timer(timeout, _weakly(callback) if inspect.ismethod(callback) else callback)


def _weakly(method: Callable[[], None]) -> Callable[[], None]:
    """``method`` (bound) called if its object is still alive, without keeping it alive."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()
    return call
