"""Content-defined chunking: FastCDC 2020 (pyfastcdc) with the store's recorded sizes.

Every writer must cut exactly as the store was initialised (its
:class:`ChunkSizes`: the store's :class:`~casstor_ops.store.schema.StoreSettings`),
or identical content would get different blocks and never deduplicate.

The source is read once, in large segments; each segment is cut with
``cut_buf`` (zero copy: chunks are memoryviews into the segment) and the
unfinished tail is carried into the next segment. A chunk is emitted only
when at least ``chunk_max`` bytes follow its start (or the input ended),
which is exactly when pyfastcdc's own stream chunker cuts, so the cut
points are identical to ``cut_stream``.

Example::

    >>> import io
    >>> from casstor_ops.store.schema import StoreSettings
    >>> sizes = [len(c) for c in chunks(io.BytesIO(bytes(3_000_000)), StoreSettings())]
    >>> sizes, sum(sizes)
    ([1048576, 1048576, 902848], 3000000)

Failures: ``OSError`` from the reader propagates.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from pyfastcdc import FastCDC

SEGMENT_BYTES = 4 * 1024 * 1024
# The first read's buffer, at most: a small file's read costs no more (a fresh 2 MiB buffer, twice the default
# chunk_max, is an mmap and munmap: ~16 us a file, as much as cutting and hashing a 20 KB file).
FIRST_READ_BYTES = 512 * 1024
# Buffers a segments() call may reuse: enough for the segments a duplicate store holds at once (an
# existence check's worth plus the hashing pipeline; 8 were too few: a duplicate store ran at
# 360-460 MB/s, 450-540 with 16, no better with 24); a new-data store holds more and allocates.
REUSED_BUFFERS = 16


class ChunkSizes(Protocol):
    """The recorded sizes a store cuts by: :class:`~casstor_ops.store.schema.StoreSettings` has them.

    A protocol, not the settings class, so that blocks are cut below the schema that records them.
    """

    @property
    def chunk_min(self) -> int: ...
    @property
    def chunk_avg(self) -> int: ...
    @property
    def chunk_max(self) -> int: ...
    @property
    def normalized_chunking(self) -> int: ...


def make_chunker(settings: ChunkSizes) -> FastCDC:
    """A FastCDC instance with the recorded sizes and normalisation level."""
    return FastCDC(settings.chunk_avg, min_size=settings.chunk_min, max_size=settings.chunk_max,
                   normalized_chunking=settings.normalized_chunking)


@dataclass
class Segment:
    """One read of the source: how many bytes it read, the chunks completed so far, and whether it is the last."""

    fresh_bytes: int            # bytes newly read from the source
    chunks: list[memoryview]    # complete chunks, in file order; views into this segment's buffer
    last: bool = False          # the source ended: these were its last chunks


class _Buffers:
    """Segment buffers, each reused once no view of it is alive.

    Consumers hold chunks (views) until their upload is acknowledged, so a
    buffer is free only when every view of it is gone; a bytearray refuses
    to resize while views exist, which is the test. A fresh 4 MiB buffer
    costs page faults and zero-filling: a fifth of a duplicate store's
    main thread (py-spy).
    """

    def __init__(self, size: int, keep: int = REUSED_BUFFERS) -> None:
        self._size = size
        self._kept: deque[bytearray] = deque(maxlen=keep)

    def take(self) -> bytearray:
        for _ in range(len(self._kept)):
            buf = self._kept[0]
            self._kept.rotate(-1)
            if _unviewed(buf):
                return buf
        buf = bytearray(self._size)
        self._kept.append(buf)
        return buf


def _unviewed(buf: bytearray) -> bool:
    try:
        buf.append(0)
    except BufferError:  # "Existing exports of data: object cannot be re-sized"
        return False
    buf.pop()
    return True


def _read_into(reader: BinaryIO, view: memoryview) -> int:
    """Fill ``view`` as far as possible (pipes return short reads); the count read."""
    filled = 0
    while filled < len(view):
        n = reader.readinto(view[filled:])
        if not n:
            break
        filled += n
    return filled


def segments(reader: BinaryIO, settings: ChunkSizes, segment_bytes: int = SEGMENT_BYTES) -> Iterator[Segment]:
    """Read ``reader`` once, in segments, yielding the chunks each completes.

    The first read is of ``2 x chunk_max`` bytes but at most
    ``FIRST_READ_BYTES``, into a buffer of its own: a small file (an HTTP
    PUT's body) never costs a full segment's buffer.
    """
    cdc = make_chunker(settings)
    max_size = settings.chunk_max
    segment_bytes = max(segment_bytes, 2 * max_size)
    buffers = _Buffers(segment_bytes + max_size)  # the carried tail is shorter than chunk_max
    carry = b""
    eof = False
    first = True
    while not eof:
        wanted = min(2 * max_size, FIRST_READ_BYTES) if first else segment_bytes
        view = memoryview(bytearray(wanted) if first else buffers.take())
        first = False
        view[:len(carry)] = carry
        n = _read_into(reader, view[len(carry):len(carry) + wanted])
        eof = n < wanted
        end = len(carry) + n
        view = view[:end]
        done = []
        start = 0
        for chunk in cdc.cut_buf(view):
            if not eof and end - chunk.offset < max_size:
                break
            done.append(chunk.data)
            start = chunk.offset + chunk.length
        carry = bytes(view[start:])
        del view  # the consumer's chunks are then the buffer's only views
        yield Segment(n, done, eof)


def chunks(source: BinaryIO | str | os.PathLike, settings: ChunkSizes) -> Iterator[memoryview]:
    """The content-defined chunks of a readable binary file or a path, in order."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as reader:
            yield from chunks(reader, settings)
        return
    for segment in segments(source, settings):
        yield from segment.chunks
