"""A browser form's ``multipart/form-data`` body, as POST Object sends it: the fields, then the file, streamed.

POST Object's fields come before its ``file`` part (S3 ignores any after
it), so the server reads a bounded head of the body on the event loop
(``FIELDS_LIMIT``), :func:`parse_head` finds the fields and where the file's
bytes begin, and :class:`FilePart` then streams those bytes to the store on
a write thread, up to the closing boundary, without holding the file: it
keeps only a boundary's length of bytes back between reads (the boundary
may be split across two of them). Field names are case-insensitive, as S3
takes them, so they are kept in lower case; values are UTF-8.

Example::

    >>> body = (b'--X\\r\\nContent-Disposition: form-data; name="Key"\\r\\n\\r\\nk\\r\\n'
    ...         b'--X\\r\\nContent-Disposition: form-data; name="file"; filename="a.txt"\\r\\n\\r\\n'
    ...         b'bytes\\r\\n--X--\\r\\n')
    >>> head = parse_head(body, b"X", ended=True)
    >>> head.fields, head.filename
    ({'key': 'k'}, 'a.txt')
    >>> FilePart(io.BytesIO(body), b"X", head.offset).read()
    b'bytes'

Failures (:class:`~.errors.S3Error`): no boundary in the request's
Content-Type, a part without a name, a field given twice, a body that ends
before its file part or before the file's closing boundary:
MalformedPOSTRequest; fields longer than ``FIELDS_LIMIT``:
MaxPostPreDataLengthExceededError; a file longer than ``most`` bytes:
EntityTooLarge, raised while reading (nothing is stored).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from email.message import Message
from email.utils import collapse_rfc2231_value
from typing import BinaryIO

from casstor_ops.serve.s3.errors import S3Error

FIELDS_LIMIT = 64 << 10  # the fields before the file part (S3's own limit is 20 KB)
_READ = 1 << 20


@dataclass(frozen=True)
class FormHead:
    """The fields before the file (lower-case names), the file part's ``filename`` ("" if none), and the
    offset in the body where the file's bytes begin."""

    fields: dict[str, str]
    filename: str
    offset: int


def malformed(message: str = "The body of your POST request is not well-formed multipart/form-data.") -> S3Error:
    return S3Error("MalformedPOSTRequest", message)


def boundary_of(content_type: str) -> bytes:
    """The boundary of a ``multipart/form-data; boundary=...`` Content-Type."""
    message = Message()
    message["content-type"] = content_type
    boundary = message.get_param("boundary")
    if message.get_content_type() != "multipart/form-data" or not isinstance(boundary, str) or not boundary:
        raise malformed("A POST to a bucket must be multipart/form-data with a boundary.")
    return boundary.encode("latin-1")


def parse_head(head: bytes, boundary: bytes, ended: bool) -> FormHead:
    """The fields of ``head`` (the body's first bytes; ``ended``: the whole body) up to the file part."""
    dash = b"--" + boundary
    position = head.find(dash)
    fields: dict[str, str] = {}
    while position >= 0:
        position += len(dash)
        if head.startswith(b"--", position):
            raise malformed("POST requires exactly one file upload per request (a part named 'file').")
        headers_end = head.find(b"\r\n\r\n", position)
        if headers_end < 0:
            break
        name, filename = _disposition(head[position:headers_end])
        start = headers_end + 4
        if name == "file":
            return FormHead(fields, filename, start)
        end = head.find(b"\r\n" + dash, start)
        if end < 0:
            break
        if name in fields:
            raise malformed(f"The field {name!r} is given twice.")
        try:
            fields[name] = head[start:end].decode("utf-8")
        except UnicodeDecodeError:
            raise malformed(f"The field {name!r} is not UTF-8.") from None
        position = end + 2
    if ended:
        raise malformed()
    raise S3Error("MaxPostPreDataLengthExceededError", f"Your POST request fields preceding the upload file "
                                                       f"were too large (at most {FIELDS_LIMIT} bytes here).")


def _disposition(headers: bytes) -> tuple[str, str]:
    """(lower-case name, filename or "") of a part's headers."""
    message = Message()
    for line in headers.decode("utf-8", "replace").split("\r\n"):
        name, colon, value = line.partition(":")
        if colon:
            message[name.strip()] = value.strip()
    name = message.get_param("name", header="content-disposition")
    if not name:
        raise malformed("A part of the form has no name.")
    return collapse_rfc2231_value(name).lower(), message.get_filename() or ""


class FilePart(io.RawIOBase):
    """The file's bytes of a form body read from ``source``: those from ``offset`` to the closing boundary. More
    than ``most`` of them (None: no limit) is EntityTooLarge as soon as they are read."""

    def __init__(self, source: BinaryIO, boundary: bytes, offset: int, most: int | None = None) -> None:
        super().__init__()
        self._source = source
        self._delimiter = b"\r\n--" + boundary
        self._skip = offset
        self._most = most
        self._held = bytearray()
        self._ready = 0
        self._ended = False
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        while not self._ready and not self._ended:
            self._scan()
        count = min(len(buffer), self._ready)
        buffer[:count] = self._held[:count]
        del self._held[:count]
        self._ready -= count
        self.size += count
        if self._most is not None and self.size > self._most:
            raise S3Error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
        return count

    def _scan(self) -> None:
        """How many held bytes are the file's for sure (scanned once per read from the source)."""
        found = self._held.find(self._delimiter)
        if found == 0:
            self._ended = True
        elif found > 0:
            self._ready = found
        elif len(self._held) >= len(self._delimiter):
            # The last bytes may begin a delimiter split across two reads: kept back until the next one.
            self._ready = len(self._held) - len(self._delimiter) + 1
        else:
            self._fill()

    def _fill(self) -> None:
        chunk = self._source.read(_READ)
        if not chunk:
            raise malformed("The body ended before the file's closing boundary.")
        if self._skip:
            skipped = min(self._skip, len(chunk))
            chunk, self._skip = chunk[skipped:], self._skip - skipped
        self._held += chunk
