"""Block uploads: a block's content row, then its index row, each block once.

A block this store is to write (it claimed it, :mod:`casstor_ops.store.blocks.claims`)
is encoded by the store's codec (compressed, or kept raw when that saves
too little: :mod:`casstor_ops.store.blocks.codec`) in the caller's thread, only
then: a block found stored costs no compression. It goes to ``blocks``
first, small ones several to a request (``UNLOGGED_BATCH_BYTES``); once that
write is acknowledged, its row in the ``existing_blocks`` index follows,
``INDEX_BATCH`` rows to an unlogged batch. So the index never names a block
whose content is not stored, and a store asking "do you have it?"
(:mod:`casstor_ops.store.blocks.existence`) can trust it.

Content is held from the moment a block is cut until it is *verified*: found
by a check, or written and indexed. ``held_bytes`` is what the pipeline bounds;
``verified`` (block → monotonic time its check or write was sent) is what the
commit protocol relies on. ``new_blocks`` / ``new_bytes`` count the blocks this
store wrote, ``new_stored_bytes`` what they take as stored, ``written`` each of those blocks' stored size.

Example::

    >>> uploads = BlockUploads(requests, statements, BlockCodec.parse("zstd:3"), on_indexed=claims.indexed)  # doctest: +SKIP
    >>> uploads.hold(digest, data); uploads.upload(digest)                     # doctest: +SKIP
    >>> while requests.busy or uploads.unsent: uploads.send_unsent(); requests.poll()  # doctest: +SKIP

Failure behaviour: writes are retried by the request queue; one that keeps
failing raises from the request queue's ``poll``. A block written whose index row
is not leaves an orphan content row (rewritten by the next store of it, or
freed by reclaim), never an index row without content.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial

from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.cql.request_queue import UNLOGGED_BATCH_BYTES, Requests
from casstor_ops.store.cql.statements import Statements

INDEX_BATCH = 32  # existing_blocks rows per unlogged batch (~1.5 KiB: under the 5 KiB warn threshold)
# Small blocks' content goes several to an unlogged batch of at most UNLOGGED_BATCH_BYTES of content (a block as
# large goes alone): a first store of 5,626 small files (median 1.2 KB compressed) sent 5,260 content requests, one
# a block, of its 9,138; batched, 1,354, and the node's CPU fell 15 % (2.24 -> 1.91 s, 5 alternated pairs).
CONTENT_BATCH_ROWS = 64  # bounds the partitions of one batch (the local nodes warn above 128)


class BlockUploads:
    """The content this store holds, its writes and index rows, and what is verified."""

    def __init__(self, requests: Requests, statements: Statements, codec: BlockCodec,
                 on_indexed: Callable[[list[bytes]], None]) -> None:
        self._requests = requests
        self._st = statements
        self._codec = codec
        self._on_indexed = on_indexed
        self._pending: dict[bytes, memoryview | bytes] = {}  # hash -> content, until verified
        self._verified: dict[bytes, float] = {}
        self._to_write: list[tuple] = []  # small blocks' content rows, not sent yet
        self._to_write_bytes = 0
        self._to_index: list[tuple[bytes, float, int]] = []  # (hash, sent, stored size)
        self.held_bytes = 0
        self.new_blocks = 0
        self.new_bytes = 0
        self.new_stored_bytes = 0
        self.written: dict[bytes, int] = {}  # block -> its stored size, for the blocks this store wrote

    @property
    def verified(self) -> Mapping[bytes, float]:
        """Block -> ``time.monotonic()`` when its check or write was sent (only durations are taken from it)."""
        return self._verified

    @property
    def unsent(self) -> bool:
        """Small blocks wait for their content to be sent, or written blocks for their index rows."""
        return bool(self._to_write or self._to_index)

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
        """Write a held block's content (a small one with others: :meth:`send_unsent` sends what waits); its index
        row follows the acknowledgement."""
        data = self._pending[digest]
        codec, payload = self._codec.encode(data)
        row = (digest, len(data), codec, payload)
        if len(payload) >= UNLOGGED_BATCH_BYTES:
            self._requests.submit(self._st.insert_block, row, partial(self._written, [row], time.monotonic()))
            return
        if self._to_write_bytes + len(payload) > UNLOGGED_BATCH_BYTES:
            self._send_content()
        self._to_write.append(row)
        self._to_write_bytes += len(payload)
        if len(self._to_write) >= CONTENT_BATCH_ROWS:
            self._send_content()

    def _send_content(self) -> None:
        rows, self._to_write, self._to_write_bytes = self._to_write, [], 0
        if rows:
            self._requests.submit_batch(self._st.insert_block, rows, partial(self._written, rows, time.monotonic()))

    def _written(self, rows: list[tuple], sent: float, _rows) -> None:
        self._to_index.extend((digest, sent, len(payload)) for digest, _, _, payload in rows)
        if len(self._to_index) >= INDEX_BATCH:
            self._send_index()

    def send_unsent(self) -> None:
        """Send the small blocks' content that waits for others, and the index rows of the blocks written so far."""
        self._send_content()
        self._send_index()

    def _send_index(self) -> None:
        items, self._to_index = self._to_index, []
        if items:
            rows = [(digest, len(self._pending[digest]), stored) for digest, _, stored in items]
            self._requests.submit_batch(self._st.insert_existing, rows, partial(self._indexed, items))

    def _indexed(self, items: list[tuple[bytes, float, int]], _rows) -> None:
        for digest, sent, stored in items:
            self.new_blocks += 1
            self.new_bytes += self._verify(digest, sent)
            self.new_stored_bytes += stored
            self.written[digest] = stored
        self._on_indexed([digest for digest, _, _ in items])
