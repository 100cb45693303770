"""The content of a small version, read on the driver's callbacks: no thread waits for it.

For a caller on an event loop (``casstor serve``'s GET of a small file): the
version's block list is read in one request and its distinct blocks in one
more (one key: ``read_block``, routed to a replica; several, up to
``MAX_BLOCKS``: ``IN ?``), each block is decoded and checked against its hash
and size, the list against the head's block count, size and file hash. The
two answers are handled on the driver's thread, which the checks hold for
about a millisecond per MiB. An inline file's content came with its head
(:mod:`casstor_ops.store.engine.inline`): it is checked and answered at once.

This is the fast path for the case where everything is in order, and only
that: it never tells a change from corruption, and it does not retry. Any
doubt (more blocks than one read asks for, a list that does not match the
head, a block missing or damaged, a request that failed or timed out) answers
``None``, and the caller reads the version again through
:class:`~casstor_ops.store.engine.restore.Restore`, which retries, re-reads the head
and raises the error that applies (:class:`~casstor_ops.errors.FileChangedError`,
:class:`~casstor_ops.errors.CorruptionError`, or the driver's).

Example::

    >>> SmallRead(session, statements, head, done).start()   # doctest: +SKIP
    >>> # later, on the driver's thread: done(b"...") or done(None)

Failure behaviour: none raised; every failure is ``done(None)`` (above). An
error in ``done`` itself is the caller's: it propagates into the driver's
callback and is logged there.
"""

from __future__ import annotations

from collections.abc import Callable

from cassandra.cluster import Session

from casstor_ops.errors import CorruptionError
from casstor_ops.store.blocks.block_list import carried
from casstor_ops.store.blocks.hashing import file_hash
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.engine.inline import plaintext
from casstor_ops.store.engine.restore import BLOCKS_PER_READ, blocks_read, checked_blocks, found_blocks
from casstor_ops.store.records import FileInfo

MAX_BLOCKS = BLOCKS_PER_READ  # a version read this way has at most this many blocks: its blocks are one read

Answer = Callable[[bytes | None], None]
_SENT = object()  # what a handler returns when it sent the next read: the answer comes with that one


class SmallRead:
    """One read of one small version (not reusable); see the module docstring."""

    def __init__(self, session: Session, statements: Statements, head: FileInfo, done: Answer) -> None:
        self._session = session
        self._st = statements
        self._head = head
        self._done = done
        # Prepared now (once per session), in the caller's thread: a statement first used in a handler would be
        # prepared there, waiting for the driver's thread that handler runs on.
        statements.read_block, statements.read_blocks

    def start(self) -> None:
        """Send the block list's read; ``done`` is called once, later, on the driver's thread (at once for an
        inline file: its content came with the head, or the careful path reads it)."""
        head = self._head
        if head.is_inline:
            plain = plaintext(head.size, head.hash, head.inline) if head.inline is not None else None
            self._done(plain if isinstance(plain, bytes) else None)
            return
        if not 0 < head.blocks <= MAX_BLOCKS:
            self._done(None)
            return
        rows = carried(head)
        if rows is None:
            self._send(Query(self._st.file_blocks, (head.id, head.version)), self._listed)
        elif self._listed(rows) is not _SENT:
            self._done(None)

    def _send(self, read: Query, handler: Callable[[list], object]) -> None:
        """Send a read; its rows go to ``handler``, which returns the answer, or ``_SENT`` when it sent the next
        read."""
        def answered(rows: list) -> None:
            try:
                result = handler(rows)
            except Exception:  # a reply the checks did not foresee: the careful path decides
                result = None
            if result is not _SENT:
                self._done(result)

        future = self._session.execute_async(*read, execution_profile=self._st.plain_rows)
        future.add_callbacks(answered, lambda _error: self._done(None))

    def _listed(self, rows: list) -> object:
        """Send the read of the blocks the list names (``_SENT``); None when the list is not the head's."""
        head = self._head
        if len(rows) != head.blocks or sum(size for _, _, size in rows) != head.size:
            return None
        read = blocks_read(self._st, list(dict.fromkeys(digest for _, digest, _ in rows)))
        self._send(read, lambda found: self._fetched(rows, found))
        return _SENT

    def _fetched(self, rows: list, found: list) -> bytes | None:
        """The checked content; None when a block is missing or damaged, or the list does not hash to the head's."""
        stored = found_blocks(found)
        if any(digest not in stored for _, digest, _ in rows) or file_hash(d for _, d, _ in rows) != self._head.hash:
            return None
        try:
            return b"".join(checked_blocks(self._head.id, [stored[digest].listed(digest, offset, size)
                                                           for offset, digest, size in rows]))
        except CorruptionError:
            return None
