"""aws-chunked request bodies (``Content-Encoding: aws-chunked``): decoded as they are read, each chunk's
signature checked, the trailer's headers kept.

A body of ``x-amz-content-sha256: STREAMING-...`` is a sequence of chunks,
``<hex size>[;chunk-signature=<sig>]\\r\\n<bytes>\\r\\n``, ending with a chunk
of size 0, then (``...-TRAILER`` modes) trailing header lines such as
``x-amz-checksum-crc32:<base64>`` and an empty line. In the signed modes each
chunk's signature chains from the previous one (the seed: the request's own
signature, :func:`~.sigv4.chunk_string_to_sign`); a signed trailer carries
``x-amz-trailer-signature``. The checksum itself is checked by :mod:`.checksums`.

Example::

    >>> body = io.BytesIO(b"5\\r\\nhello\\r\\n0\\r\\nx-amz-checksum-crc32:NhCmhg==\\r\\n\\r\\n")
    >>> reader = AwsChunked(body, Signed("AK", STREAMING_UNSIGNED_TRAILER))
    >>> reader.read(), reader.trailer
    (b'hello', {'x-amz-checksum-crc32': 'NhCmhg=='})

Failures (:class:`~.errors.S3Error`): a malformed chunk header, size or
line end, or a body that ends before its last chunk: IncompleteBody; a
chunk or trailer signature that does not match: SignatureDoesNotMatch
(raised as the store reads, so nothing is committed).
"""

from __future__ import annotations

import hashlib
import hmac
import io
from typing import BinaryIO

from casstor_ops.serve.s3.errors import S3Error, signature_mismatch
from casstor_ops.serve.s3.sigv4 import (STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER,
                                        Signed, chunk_string_to_sign, sign, trailer_string_to_sign)

MAX_LINE = 4096
MAX_CHUNK = 1 << 30


def _incomplete(what: str) -> S3Error:
    return S3Error("IncompleteBody", f"the aws-chunked body is malformed: {what}")


class AwsChunked(io.RawIOBase):
    """The decoded content of an aws-chunked body read from ``source`` (see the module docstring)."""

    def __init__(self, source: BinaryIO, signed: Signed) -> None:
        super().__init__()
        self._source = io.BufferedReader(source, 1 << 16) if not isinstance(source, io.BufferedIOBase) else source
        self._signed = signed
        self._checks = signed.payload in (STREAMING_SIGNED, STREAMING_SIGNED_TRAILER)
        self._has_trailer = signed.payload in (STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER)
        self._previous = signed.seed
        self._left = 0
        self._chunk = hashlib.sha256()
        self._signature = ""
        self._ended = False
        self.trailer: dict[str, str] = {}

    def readable(self) -> bool:
        return True

    def _line(self) -> bytes:
        line = self._source.readline(MAX_LINE)
        if not line.endswith(b"\r\n"):
            raise _incomplete("a line that does not end in CRLF, or the body ended early")
        return line[:-2]

    def _start_chunk(self) -> None:
        size_text, _, extension = self._line().partition(b";")
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _incomplete(f"a chunk size {size_text[:20]!r} that is not hexadecimal") from None
        if not 0 <= size <= MAX_CHUNK:
            raise _incomplete(f"a chunk of {size} bytes")
        name, _, value = extension.partition(b"=")
        if self._checks and name.strip() != b"chunk-signature":
            raise _incomplete("a chunk without its chunk-signature")
        self._signature = value.strip().decode("ascii", "replace")
        self._left = size
        self._chunk = hashlib.sha256()
        if size == 0:
            self._end()

    def _end_chunk(self) -> None:
        if self._source.read(2) != b"\r\n":
            raise _incomplete("a chunk's data not followed by CRLF")
        self._check_chunk()

    def _check_chunk(self) -> None:
        if not self._checks:
            return
        signed = self._signed
        expected = sign(signed.key, chunk_string_to_sign(signed.amz_date, signed.scope, self._previous,
                                                         self._chunk.hexdigest()))
        if not hmac.compare_digest(expected, self._signature):
            raise signature_mismatch()
        self._previous = expected

    def _end(self) -> None:
        self._check_chunk()
        self._ended = True
        if not self._has_trailer:
            self._line()  # the final empty line
            return
        lines = []
        while True:
            line = self._line()
            if not line:
                break
            lines.append(line)
        self._read_trailer(lines)

    def _read_trailer(self, lines: list[bytes]) -> None:
        signature = None
        kept = b""
        for line in lines:
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "x-amz-trailer-signature":
                signature = value.strip()
            else:
                self.trailer[name] = value.strip()
                kept += f"{name}:{value.strip()}\n".encode("latin-1")
        if self._signed.payload == STREAMING_SIGNED_TRAILER:
            signed = self._signed
            expected = sign(signed.key, trailer_string_to_sign(signed.amz_date, signed.scope, self._previous, kept))
            if signature is None or not hmac.compare_digest(expected, signature):
                raise signature_mismatch()

    def readinto(self, buffer: memoryview) -> int:
        while not self._left:
            if self._ended:
                return 0
            self._start_chunk()
        count = self._source.readinto(memoryview(buffer)[:min(len(buffer), self._left)])
        if not count:
            raise _incomplete("the body ended inside a chunk")
        self._chunk.update(memoryview(buffer)[:count])
        self._left -= count
        if not self._left:
            self._end_chunk()
        return count
