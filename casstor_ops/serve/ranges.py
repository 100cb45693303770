"""One byte range of a GET (``Range: bytes=…``, answered 206 Partial Content).

Only a single range is served; several ranges (``bytes=0-1,5-6``) or another
unit are answered with the whole file (200), as RFC 9110 allows a server to
ignore the header. The store reads blocks from the start of the file, so a
range is served by reading and verifying the blocks up to its end and
sending only its bytes: a late range costs the read of what comes before it.

Example::

    >>> parse_range("bytes=10-19", 100), parse_range("bytes=-5", 100), parse_range("bytes=90-", 100)
    (ByteRange(start=10, stop=20), ByteRange(start=95, stop=100), ByteRange(start=90, stop=100))
    >>> parse_range("bytes=0-1,5-6", 100) is None
    True

Failures: a single range that starts at or beyond the end of the file (or
a suffix of 0 bytes) raises :class:`Unsatisfiable` (answered 416 with
``Content-Range: bytes */SIZE``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SINGLE = re.compile(r"bytes=(\d*)-(\d*)")


class Unsatisfiable(Exception):
    """A range that names no byte of the file."""


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``start`` up to (excluding) ``stop``."""

    start: int
    stop: int

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.stop - 1}/{size}"


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The range a ``Range`` header asks for in a file of ``size`` bytes; None for the whole file."""
    match = _SINGLE.fullmatch((header or "").strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable(header)
        return ByteRange(max(0, size - suffix), size)
    start = int(first)
    if last != "" and int(last) < start:
        return None  # invalid: RFC 9110 says to ignore it
    if start >= size:
        raise Unsatisfiable(header)
    return ByteRange(start, size if last == "" else min(int(last) + 1, size))
