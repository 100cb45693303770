"""Inline files: a small file's content kept in its head row, not in blocks.

Vocabulary:

* an **inline file** is a committed file whose head row (``casstor_meta.files``)
  holds its content: ``content`` encoded as a block's is (``codec``:
  :mod:`casstor_ops.store.blocks.codec`) and ``stored_size`` its length as kept. Its
  head says ``blocks`` 0 and a size over 0 (:attr:`FileInfo.is_inline
  <casstor_ops.store.records.FileInfo.is_inline>`); it has no block list and
  names no block.
* Only a store initialised with ``inline_max`` > 0 (``casstor init
  --inline-max``) keeps files inline: every file of 1 to ``inline_max`` bytes,
  at most the chunker's minimum, so one that would be a single block.
* Its file hash is the one the same bytes kept as a block would have (BLAKE2b
  of the block hash), so ETags and verify agree whichever way a file is kept.

Why: a small file kept in a block costs five requests to store (an
existence check, the content, its index row, the block list, the head) and
two to read (the list, the block); inline, one each. What it gives up is
dedup: every version of every ID keeps its own copy, freed when its head is
overwritten or removed (compaction), never by reclaim. It suits a store of
small, mostly distinct objects (``casstor serve`` as a cache); a store of
backups of trees, where the same small files come back under new IDs, keeps
the default (0: no inline files).

Safety: head and content are one row, written in one upsert, so a reader sees
the old version or the new one whole, and there is no block a reclaim could
take from under it.

Example::

    >>> from casstor_ops.store.blocks.codec import BlockCodec
    >>> stored = encode(BlockCodec.parse("none"), b"hello")
    >>> stored.codec, stored.payload
    (None, b'hello')
    >>> plaintext(5, inline_hash(b"hello"), stored)
    b'hello'
    >>> plaintext(5, inline_hash(b"world"), stored)
    'its content does not match its file hash'

Failures: :func:`checked` raises :class:`~casstor_ops.errors.CorruptionError`
naming the file when its content does not decode to its size or does not
match its file hash; :func:`plaintext` says what is wrong instead.
"""

from __future__ import annotations

import time

from cassandra.query import UNSET_VALUE

from casstor_ops.errors import CorruptionError
from casstor_ops.store.blocks.codec import BlockCodec, DamagedBlock, decode
from casstor_ops.store.blocks.hashing import block_hash, file_hash
from casstor_ops.store.records import FileInfo, InlineContent, StoreResult
from casstor_ops.store.schema import StoreSettings


def fits(settings: StoreSettings, size: int) -> bool:
    """Whether a file of ``size`` bytes is kept inline in this store."""
    return 0 < size <= settings.inline_max


def inline_hash(data: bytes | memoryview) -> bytes:
    """The file hash of an inline file holding ``data``: that of the one block it would be."""
    return file_hash([block_hash(data)])


def encode(codec: BlockCodec, data: bytes | memoryview) -> InlineContent:
    """``data`` as an inline file's head row keeps it (compressed as a block would be, or raw)."""
    name, payload = codec.encode(data)
    return InlineContent(name, bytes(payload))


def head_columns(stored: InlineContent | None, inline_store: bool) -> tuple:
    """The values of a head write's ``content, codec, stored_size``: ``stored``'s, or for a file kept in blocks,
    null in a store with inline files (``inline_store``), which clears an inline version it overwrites, and
    unset (no tombstones) in one without, which has no such version (``inline_max`` is fixed at init)."""
    if stored is not None:
        return stored.payload, stored.codec, len(stored.payload)
    return (None, None, None) if inline_store else (UNSET_VALUE, UNSET_VALUE, UNSET_VALUE)


def inline_result(file_id: str, size: int, stored: InlineContent, digest: bytes, started: float) -> StoreResult:
    """What the store of an inline file of ``size`` bytes reports: no block, and every byte new (it is kept once
    more, in its head); ``started`` is the store's ``time.perf_counter()`` at its start."""
    return StoreResult(file_id, size, 0, 0, size, round(time.perf_counter() - started, 6), len(stored.payload),
                       digest)


def plaintext(size: int, digest: bytes, stored: InlineContent) -> bytes | str:
    """The plaintext of ``stored`` as the content of an inline file of ``size`` bytes and file hash ``digest``; or
    what is wrong with it (text)."""
    try:
        plain = decode(stored.codec, stored.payload, size)
    except DamagedBlock as err:
        return f"its content {err}"
    return plain if inline_hash(plain) == digest else "its content does not match its file hash"


def checked(head: FileInfo, stored: InlineContent) -> bytes:
    """The plaintext of the inline file ``head``, checked against its size and file hash; CorruptionError if not."""
    plain = plaintext(head.size, head.hash, stored)
    if isinstance(plain, str):
        raise CorruptionError(f"{head.id!r}: {plain}; the file cannot be restored")
    return plain
