"""The store's non-blocking calls, answered on the driver's thread: :class:`StoreCallbacks` (``Store.callbacks``).

Every call of :class:`~casstor_ops.store.api.Store` blocks its thread until
the driver answered (it drives the driver's futures itself). These do not:
each sends its requests and returns; the answer comes later through
``done``, called once on the driver's thread, e.g. to resolve an asyncio
future with ``call_soon_threadsafe`` (``casstor serve`` reads a head, reads a
small file and writes an inline one this way, with no worker thread). They
are the fast paths only: none retries, and the caller falls back to the
blocking call, which does, at any doubt.

Example::

    >>> calls = store.callbacks                                          # doctest: +SKIP
    >>> calls.stat_async("a.txt", print)                                  # doctest: +SKIP
    >>> calls.read_small_async(store.stat("a.txt"), print)                # doctest: +SKIP
    >>> if calls.keeps_inline(5): calls.put_inline_async(b"hello", "a.txt", lease, print)  # doctest: +SKIP

Failures: what can be told before sending (a bad ID, data not kept inline,
a lapsed lease) is raised at once; everything after is ``done``'s: an error
(``stat_async``, ``put_inline_async``) or ``None`` (``read_small_async``).
``done`` must not block, and an error it raises is the caller's: it
propagates into the driver's callback and is logged there.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from functools import partial

from cassandra.cluster import Session

from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine import catalog, inline
from casstor_ops.store.engine.commit import commit_inline_async
from casstor_ops.store.engine.small_read import Answer, SmallRead
from casstor_ops.store.ids import check_id
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.records import FileInfo, StoreResult
from casstor_ops.store.schema import StoreSettings


class StoreCallbacks:
    """One store's non-blocking calls (see the module docstring); made by the :class:`~casstor_ops.store.api.Store`
    that owns the session, which hands over its pieces."""

    def __init__(self, session: Session, settings: StoreSettings, statements: Statements, codec: BlockCodec) -> None:
        self._session = session
        self._settings = settings
        self._st = statements
        self._codec = codec

    def keeps_inline(self, size: int) -> bool:
        """Whether this store keeps a file of ``size`` bytes inline, in its head row (:mod:`.inline`)."""
        return inline.fits(self._settings, size)

    def put_inline_async(self, data: bytes, file_id: str, lease: WriterLease,
                         done: Callable[[StoreResult | None, Exception | None], None]) -> None:
        """Store ``data``, which this store keeps inline (:meth:`keeps_inline`), under ``file_id`` without
        waiting: one head write. ``done(result, None)`` or ``done(None, error)`` is called once, on the driver's
        thread (it must not block).

        Example::

            >>> store.callbacks.put_inline_async(b"hello", "a.txt", lease, print)   # doctest: +SKIP

        Raises at once a bad ID, ``data`` this store does not keep inline
        (ValueError), or a lapsed ``lease`` (LeaseLapsedError). A write that
        fails or times out is not retried (:func:`~casstor_ops.store.engine.commit.commit_inline_async`):
        the previous version stays, or this one is whole; ``Store.put`` retries.
        """
        check_id(file_id, storing=True)
        if not self.keeps_inline(len(data)):
            raise ValueError(f"{len(data)} bytes: this store keeps 1 to {self._settings.inline_max} bytes inline")
        commit_inline_async(self._session, self._st, Namespace.for_session(self._session, self._settings.directory_rows),
                            file_id, data, self._codec, lease.fence, done)

    def stat_async(self, file_id: str, done: Callable[[FileInfo | None, Exception | None], None],
                   version: uuid.UUID | None = None, at: datetime | None = None) -> None:
        """``Store.stat`` (``version``, ``at`` alike) without waiting: ``done(head, None)`` or ``done(None, error)``
        is called once, on the driver's thread (it must not block), e.g. to resolve an asyncio future with
        ``call_soon_threadsafe``.

        Raises at once what ``Store.stat`` raises before reading (a bad ID).
        """
        read, when = catalog.lookup(self._st, check_id(file_id), version, at)

        def answered(rows: list) -> None:
            try:
                head = catalog.head_of(file_id, rows[0] if rows else None, when)
            except Exception as err:
                done(None, err)
                return
            done(head, None)

        future = self._session.execute_async(*read, execution_profile=self._st.named_rows)
        future.add_callbacks(answered, partial(done, None))

    def read_small_async(self, head: FileInfo, done: Answer) -> None:
        """The content of the small version ``head`` names (from ``Store.stat``), read without waiting:
        ``done(content)`` once every block and the file hash checked out, or ``done(None)`` at the first doubt
        (anything missing, damaged or failed, or more than ``MAX_BLOCKS`` blocks); then read it with
        ``Store.read``, which tells a change from corruption. ``done`` is called once, on the driver's thread: it
        must not block (:mod:`casstor_ops.store.engine.small_read`).

        Example::

            >>> store.callbacks.read_small_async(store.stat("a.txt"), print)   # doctest: +SKIP
        """
        SmallRead(self._session, self._st, head, done).start()
