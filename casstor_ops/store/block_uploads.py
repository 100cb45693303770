"""Block uploads: a block's content row and its index row, in one mutation, each block once.

A block this store is to write (it claimed it, :mod:`casstor_ops.store.claims`)
is encoded by the store's codec (compressed, or kept raw when that saves
too little: :mod:`casstor_ops.store.codec`) in the caller's thread, only
then: a block found stored costs no compression. Its content row in
``blocks`` and its row in the ``existing_blocks`` index go in one unlogged
batch: both are keyed by the block's hash in the one keyspace
``casstor_data``, so Cassandra makes them a single mutation, written to
each replica's commit log as one entry and acknowledged as one (a
single-partition batch: no batch log, and exempt from the batch size
thresholds). So the index never names a block whose content is not stored
(each replica applies both rows or neither, and the write is acknowledged
by a quorum for both at once), and a store asking "do you have it?"
(:mod:`casstor_ops.store.existence`) can trust it. Measured: one request
per new block instead of a content write plus a share of an index batch,
about a tenth of the node's CPU per new block (``docs/benchmarks.md``).

Content is held from the moment a block is cut until it is *verified*: found
by a check, or written with its index row. ``held_bytes`` is what the
pipeline bounds; ``verified`` (block -> wall time its check or write was
sent) is what the commit protocol relies on. ``new_blocks`` / ``new_bytes``
count the blocks this store wrote, ``new_stored_bytes`` what they take as stored.

Example::

    >>> uploads = BlockUploads(window, statements, BlockCodec.parse("zstd:3"), on_indexed=claims.indexed)  # doctest: +SKIP
    >>> uploads.hold(digest, data); uploads.upload(digest)                     # doctest: +SKIP
    >>> while window.busy: window.poll()                                       # doctest: +SKIP

Failure behaviour: writes are retried by the request window (the same
upsert: idempotent); one that keeps failing raises from the window's
``poll``. A write that fails leaves both rows or neither on each replica,
never an index row without content.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial

from casstor_ops.store.codec import BlockCodec
from casstor_ops.store.inflight import Window
from casstor_ops.store.statements import Statements


class BlockUploads:
    """The content this store holds, its writes and index rows, and what is verified."""

    def __init__(self, window: Window, statements: Statements, codec: BlockCodec,
                 on_indexed: Callable[[list[bytes]], None]) -> None:
        self._window = window
        self._st = statements
        self._codec = codec
        self._on_indexed = on_indexed
        self._pending: dict[bytes, memoryview | bytes] = {}  # hash -> content, until verified
        self._verified: dict[bytes, float] = {}
        self.held_bytes = 0
        self.new_blocks = 0
        self.new_bytes = 0
        self.new_stored_bytes = 0

    @property
    def verified(self) -> Mapping[bytes, float]:
        """Block -> wall time its check or write was sent."""
        return self._verified

    def known(self, digest: bytes) -> bool:
        """Verified, or held for a check or an upload already under way."""
        return digest in self._verified or digest in self._pending

    def hold(self, digest: bytes, data: memoryview | bytes) -> None:
        """Keep ``data`` until the block is verified."""
        self._pending[digest] = data
        self.held_bytes += len(data)

    def found(self, digest: bytes, sent: float) -> None:
        """A check sent at ``sent`` found the block: its content need not be held."""
        self._verify(digest, sent)

    def _verify(self, digest: bytes, sent: float) -> int:
        """Record the block as verified at ``sent``; the size of the content no longer held."""
        self._verified[digest] = sent
        size = len(self._pending.pop(digest, b""))
        self.held_bytes -= size
        return size

    def upload(self, digest: bytes) -> None:
        """Write a held block's content and its index row (one mutation)."""
        data = self._pending[digest]
        codec, payload = self._codec.encode(data)
        rows = [(self._st.insert_block, (digest, len(data), codec, payload)),
                (self._st.insert_existing, (digest, len(data), len(payload)))]
        self._window.submit_together(rows, partial(self._indexed, digest, time.time(), len(payload)))

    def _indexed(self, digest: bytes, sent: float, stored: int, _rows) -> None:
        self.new_blocks += 1
        self.new_bytes += self._verify(digest, sent)
        self.new_stored_bytes += stored
        self._on_indexed([digest])
