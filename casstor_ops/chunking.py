"""Content-defined chunking: FastCDC 2020 (pyfastcdc) with the store's settings.

Every writer must cut exactly as the store was initialised
(:class:`~casstor_ops.schema.StoreSettings`), or identical content would get
different blocks and never deduplicate.

The source is read once, in large segments; each segment is cut with
``cut_buf`` (zero copy: chunks are memoryviews into the segment) and the
unfinished tail is carried into the next segment. A chunk is emitted only
when at least ``chunk_max`` bytes follow its start (or the input ended),
which is exactly when pyfastcdc's own stream chunker cuts, so the cut
points are identical to ``cut_stream``.

Example::

    >>> import io
    >>> sizes = [len(c) for c in chunks(io.BytesIO(bytes(300_000)), StoreSettings())]
    >>> sizes, sum(sizes)
    ([262144, 37856], 300000)

Failures: ``OSError`` from the reader propagates.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from pyfastcdc import FastCDC

from .schema import StoreSettings

SEGMENT_BYTES = 4 * 1024 * 1024


def make_chunker(settings: StoreSettings) -> FastCDC:
    """A FastCDC instance with the recorded sizes and normalisation level."""
    return FastCDC(settings.chunk_avg, min_size=settings.chunk_min, max_size=settings.chunk_max,
                   normalized_chunking=settings.normalized_chunking)


@dataclass
class Segment:
    """One read of the source: the bytes just read, and the chunks completed so far."""

    fresh: memoryview           # the newly read bytes (for the whole-file hash), in file order
    chunks: list[memoryview]    # complete chunks, in file order; views into this segment's buffer


def _read_into(reader: BinaryIO, view: memoryview) -> int:
    """Fill ``view`` as far as possible (pipes return short reads); the count read."""
    filled = 0
    while filled < len(view):
        n = reader.readinto(view[filled:])
        if not n:
            break
        filled += n
    return filled


def segments(reader: BinaryIO, settings: StoreSettings, segment_bytes: int = SEGMENT_BYTES) -> Iterator[Segment]:
    """Read ``reader`` once, in segments, yielding the chunks each completes."""
    cdc = make_chunker(settings)
    max_size = settings.chunk_max
    segment_bytes = max(segment_bytes, 2 * max_size)
    carry = b""
    eof = False
    while not eof:
        buf = bytearray(len(carry) + segment_bytes)
        buf[:len(carry)] = carry
        view = memoryview(buf)
        n = _read_into(reader, view[len(carry):])
        eof = n < segment_bytes
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
        yield Segment(view[end - n:], done)


def chunks(source: BinaryIO | str | os.PathLike, settings: StoreSettings) -> Iterator[memoryview]:
    """The content-defined chunks of a readable binary file or a path, in order."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as reader:
            yield from chunks(reader, settings)
        return
    for segment in segments(source, settings):
        yield from segment.chunks
