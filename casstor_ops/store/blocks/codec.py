"""Block codecs: how a block's content is kept in ``casstor_data.blocks``.

A store compresses each new block on the client before it is sent
(zstd, :mod:`zstandard`), and keeps it raw when compression would not save
at least ``MIN_SAVING`` of it (random or already-compressed data). The block
hash is always the hash of the *plaintext*, so dedup never depends on the
codec, and each block row records its own codec (``codec``: null or
``"none"`` is raw), so raw and compressed blocks mix in one store and a
change of level or codec needs no migration.

The store's *compression* setting (``"zstd:3"``, ``"none"``; recorded by
``casstor init``, switchable with ``casstor init --compression``) says how
new blocks are written; reading never needs it. A block of less than
``SMALL_BLOCK_BYTES`` (a small file's whole content, a large file's last
cut) is compressed ``SMALL_BLOCK_LEVEL_STEP`` levels above it.

Decoding is bounded: a block is expected to decompress to exactly the size
its block list records, at most ``MAX_BLOCK_BYTES`` (FastCDC's largest
chunk), and nothing larger is ever allocated, whatever the frame header
claims (``zstandard`` would otherwise trust it: a 327-byte frame that says
"10 MB" allocates 10 MB). A block that does not decode to that size is
reported as damaged, never returned.

Example::

    >>> codec = BlockCodec.parse("zstd:3")
    >>> name, payload = codec.encode(b"a" * 4096)
    >>> name, len(payload) < 100
    ('zstd', True)
    >>> decode(name, payload, 4096) == b"a" * 4096
    True
    >>> BlockCodec.parse("none").encode(b"abc")
    (None, b'abc')

Failures: :meth:`BlockCodec.parse` raises
:class:`~casstor_ops.errors.CasstorError` (one line) for an unknown codec or
level; :func:`decode` raises :class:`DamagedBlock` for an unknown codec, a
corrupt frame, or a size other than the expected one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import zstandard

from casstor_ops.errors import CasstorError

ZSTD = "zstd"
NONE = "none"
ZSTD_LEVELS = range(1, 20)  # zstd's normal levels (20-22 need far more memory to decode)
DEFAULT_COMPRESSION = "zstd:3"  # level by measurement: see docs/benchmarks.md, "Compressed blocks"
# Kept raw unless compression saves this fraction: decoding a block that saved less costs restore CPU for
# almost no bytes (random data "compresses" to 100.02 %).
MIN_SAVING = 0.03
MAX_BLOCK_BYTES = 16 << 20  # FastCDC 2020's largest chunk: no block is ever larger
# Small blocks compress worse (less history to match), and a tree of small files spends its CPU on per-file work,
# not on bytes: on the 5,251 blocks of a tree of 5,626 small files (4,728 under 64 KiB, 45.5 MB), level 6 instead
# of 3 on those saved 0.65 MB (1.3 %) for 0.19 s more CPU a store of the 141 MB tree (docs/benchmarks.md); 5 saved
# 0.46 MB, 7 0.71 MB for 0.25 s, and all blocks at 6 2.07 MB for 0.62 s, which the large files' store speed pays.
SMALL_BLOCK_BYTES = 64 << 10
SMALL_BLOCK_LEVEL_STEP = 3


class DamagedBlock(ValueError):
    """A stored block that does not decode to its expected plaintext size."""


@dataclass(frozen=True)
class BlockCodec:
    """How new blocks are written: zstd at ``level``, or raw (``level`` 0)."""

    level: int

    @classmethod
    def parse(cls, spec: str) -> "BlockCodec":
        """``"zstd:LEVEL"`` (1-19), ``"zstd"`` (level 3) or ``"none"``."""
        name, _, level = spec.partition(":")
        if name == NONE and not level:
            return cls(0)
        if name == ZSTD and (not level or level.isdigit() and int(level) in ZSTD_LEVELS):
            return cls(int(level or DEFAULT_COMPRESSION.partition(":")[2]))
        raise CasstorError(f"compression {spec!r}: expected 'none' or 'zstd:LEVEL' with LEVEL "
                           f"{ZSTD_LEVELS.start}-{ZSTD_LEVELS.stop - 1}")

    def level_for(self, size: int) -> int:
        """The zstd level a block of ``size`` bytes is written at (``level`` > 0)."""
        if size >= SMALL_BLOCK_BYTES:
            return self.level
        return min(self.level + SMALL_BLOCK_LEVEL_STEP, ZSTD_LEVELS.stop - 1)

    @property
    def spec(self) -> str:
        return f"{ZSTD}:{self.level}" if self.level else NONE

    def encode(self, data: bytes | memoryview) -> tuple[str | None, bytes | memoryview]:
        """``(codec, payload)`` to store for ``data``: ``(None, data)`` when kept raw."""
        if not self.level or not data:
            return None, data
        packed = _compressor(self.level_for(len(data))).compress(data)
        if len(packed) > len(data) * (1 - MIN_SAVING):
            return None, data
        return ZSTD, packed


_local = threading.local()


def _compressor(level: int) -> zstandard.ZstdCompressor:
    """This thread's compressor for ``level``: one is not thread-safe, and making one per block cost more than
    compressing a small block."""
    cache = _local.__dict__.setdefault("compressors", {})
    if level not in cache:
        cache[level] = zstandard.ZstdCompressor(level=level)
    return cache[level]


def decode(codec: str | None, payload: bytes, size: int) -> bytes:
    """The plaintext of a stored block expected to hold ``size`` bytes; DamagedBlock if it does not."""
    if codec is None or codec == NONE:
        if len(payload) != size:
            raise DamagedBlock(f"holds {len(payload)} bytes, not {size}")
        return payload
    if codec != ZSTD:
        raise DamagedBlock(f"has unknown codec {codec!r}")
    if not 0 < size <= MAX_BLOCK_BYTES:  # encode keeps empty blocks raw; 0 would mean "unbounded" below
        raise DamagedBlock(f"is listed with {size} bytes, more than any block can hold")
    try:
        # The header's content size is checked first: decompress() allocates what it says.
        declared = zstandard.frame_content_size(payload)
        if declared not in (size, zstandard.CONTENTSIZE_UNKNOWN):
            raise DamagedBlock(f"decompresses to {declared} bytes, not {size}")
        plain = zstandard.ZstdDecompressor().decompress(payload, max_output_size=size)
    except zstandard.ZstdError as err:
        raise DamagedBlock(f"does not decompress ({err})") from None
    if len(plain) != size:
        raise DamagedBlock(f"decompresses to {len(plain)} bytes, not {size}")
    return plain
