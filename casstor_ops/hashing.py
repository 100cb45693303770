"""Block and file hashes: BLAKE2b with a 32-byte digest.

A block's hash is its key in ``casstor_data.blocks``; a file's hash (the
same function over the whole content) is recorded in its head row and
checked after every restore.

Example::

    >>> block_hash(b"hello").hex()[:16]
    '324dcf027dd4a30a'
    >>> h = file_hasher(); h.update(b"hel"); h.update(b"lo"); h.digest() == block_hash(b"hello")
    True

``FileHashThread`` computes a file hash on a second core while the caller
chunks and hashes blocks: hashlib releases the GIL for buffers over 2 KiB,
so the whole-file hash costs (almost) no time on the critical path.
"""

from __future__ import annotations

import hashlib
import queue
import threading

DIGEST_SIZE = 32


def block_hash(data: bytes | bytearray | memoryview) -> bytes:
    """The 32-byte BLAKE2b digest of one block."""
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE).digest()


def file_hasher() -> "hashlib._Hash":
    """A streaming hasher for whole-file hashes (``update`` in order, then ``digest``)."""
    return hashlib.blake2b(digest_size=DIGEST_SIZE)


class FileHashThread:
    """A file hash computed by a background thread, fed in order.

    The buffers given to :meth:`update` must not change until :meth:`digest`
    returns (the caller keeps immutable segments or fresh buffers).

    Example::

        >>> t = FileHashThread(); t.update(b"hello"); t.digest() == block_hash(b"hello")
        True
    """

    _END = object()

    def __init__(self, max_pending: int = 8) -> None:
        self._hasher = file_hasher()
        self._queue: queue.Queue = queue.Queue(max_pending)
        self._thread = threading.Thread(target=self._run, name="casstor-filehash", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (data := self._queue.get()) is not self._END:
            self._hasher.update(data)

    def update(self, data: bytes | bytearray | memoryview) -> None:
        self._queue.put(data)

    def digest(self) -> bytes:
        self._queue.put(self._END)
        self._thread.join()
        return self._hasher.digest()

    def abandon(self) -> None:
        """Stop the thread without a digest (error paths)."""
        self._queue.put(self._END)
