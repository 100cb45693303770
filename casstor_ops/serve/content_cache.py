"""Small files' content, by file hash, kept after a GET read it: the next GET of it reads only the head.

A GET always reads the file's head from the store (the head is what moves:
an overwrite, a removal), then needs the content of the version it names.
The head carries the file hash (the ETag), a hash over the block hashes, so
content read once and checked against it (every block against its hash, the
list against the file hash: :meth:`Store.read <casstor_ops.store.api.Store.read>`)
is the content of every head with that hash, now and later, under any key:
nothing here is ever stale, and identical files under several keys are
kept once. What is kept is whole files of at most ``max_file_bytes``; the
least recently used go once the total passes ``max_bytes``.

Thread-safe: the server's read threads share one cache.

Example::

    >>> cache = ContentCache(max_bytes=1 << 20, max_file_bytes=1 << 16)
    >>> cache.put(b"h" * 32, b"content")
    >>> cache.get(b"h" * 32)
    b'content'
    >>> cache.get(b"x" * 32) is None
    True

Failures: none; a file larger than ``max_file_bytes`` is not kept, and
``max_bytes=0`` keeps nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

# Per worker process. 256 MiB holds 4,096 files of 64 KiB; the server's other memory is up to 4 PUTs of what an
# upload holds in flight (docs/serve.md, "Measured").
DEFAULT_CACHE_BYTES = 256 * 1024 * 1024


class ContentCache:
    """Least-recently-used file contents by file hash, at most ``max_bytes`` in all."""

    def __init__(self, max_bytes: int, max_file_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_file_bytes = min(max_file_bytes, max_bytes)
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, file_hash: bytes) -> bytes | None:
        """The content of the file with hash ``file_hash``, if kept."""
        with self._lock:
            content = self._entries.get(file_hash)
            if content is not None:
                self._entries.move_to_end(file_hash)
            return content

    def put(self, file_hash: bytes, content: bytes) -> None:
        """Keep ``content``, checked to be the file with hash ``file_hash``, if it is small enough."""
        if len(content) > self.max_file_bytes:
            return
        with self._lock:
            if file_hash in self._entries:
                return
            self._entries[file_hash] = content
            self._bytes += len(content)
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped)

    @property
    def size_bytes(self) -> int:
        """The bytes kept."""
        return self._bytes
