"""A PUT body's digests, computed as the store reads it, and checked before its head write.

:class:`Digests` wraps the (decoded) body: it counts it and feeds the MD5
(the object's ETag), the SHA-256 when ``x-amz-content-sha256`` names one,
and the ``x-amz-checksum-<algorithm>`` the client asked for (in a header, or
named by ``x-amz-trailer`` and sent after an aws-chunked body: :mod:`.chunked`).
:meth:`Digests.check` runs in the store's ``before_commit`` hook, after the
whole body was read and stored and before the head write, so a body that does
not match what its headers promise commits nothing.

Example::

    >>> digests = Digests(io.BytesIO(b"hello"), {"content-md5": "XUFAKrxLKna5cZ2REBfFkg=="})
    >>> digests.read(), digests.etag
    (b'hello', '5d41402abc4b2a76b9719d911017c592')
    >>> digests.check()

Failures (:class:`~.errors.S3Error`): a Content-MD5 that is not base64 of 16
bytes: InvalidDigest (at once); one that does not match: BadDigest; a SHA-256
that does not match: XAmzContentSHA256Mismatch; a checksum that does not
match: BadDigest; a body shorter or longer than its declared length: IncompleteBody.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import zlib
from collections.abc import Callable, Mapping
from typing import BinaryIO

from casstor_ops.serve.s3.errors import S3Error


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


class _Crc:
    """A CRC32 or CRC32C (Castagnoli, table-driven: no compiled library is at hand) as a hashlib-like object."""

    def __init__(self, update: Callable[[bytes, int], int]) -> None:
        self._update = update
        self._value = 0

    def update(self, data: bytes) -> None:
        self._value = self._update(data, self._value)

    def digest(self) -> bytes:
        return self._value.to_bytes(4, "big")


def _crc32c(data: bytes, crc: int) -> int:
    crc ^= 0xFFFFFFFF
    table = _CRC32C
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


CHECKSUMS: dict[str, Callable[[], object]] = {
    "crc32": lambda: _Crc(zlib.crc32), "crc32c": lambda: _Crc(_crc32c),
    "sha1": hashlib.sha1, "sha256": hashlib.sha256,
}


def checksum_names(headers: Mapping[str, str]) -> dict[str, str | None]:
    """The checksums a request asks for: algorithm -> the header's base64 value, or None when it comes in the
    trailer (``x-amz-trailer``). An algorithm this server does not know: InvalidRequest."""
    wanted: dict[str, str | None] = {}
    for name, value in headers.items():
        if name.startswith("x-amz-checksum-") and name != "x-amz-checksum-algorithm" and name != "x-amz-checksum-type":
            wanted[name.removeprefix("x-amz-checksum-")] = value
    trailer = headers.get("x-amz-trailer", "")
    for name in filter(None, (n.strip().lower() for n in trailer.split(","))):
        if name.startswith("x-amz-checksum-"):
            wanted[name.removeprefix("x-amz-checksum-")] = None
    unknown = sorted(set(wanted) - set(CHECKSUMS))
    if unknown:
        raise S3Error("InvalidRequest", f"the checksum algorithm {unknown[0]!r} is not supported here "
                                        f"(supported: {', '.join(sorted(CHECKSUMS))})")
    return wanted


def content_md5(value: str | None) -> bytes | None:
    """The 16 bytes a Content-MD5 header names (None: no header); InvalidDigest if it is no such value."""
    if value is None:
        return None
    try:
        digest = base64.b64decode(value, validate=True)
    except binascii.Error:
        digest = b""
    if len(digest) != 16:
        raise S3Error("InvalidDigest", "The Content-MD5 you specified is not valid.")
    return digest


class Digests(io.RawIOBase):
    """The body, counted and digested as it is read (see the module docstring). ``trailer`` gives the
    trailing headers once the body ended (an aws-chunked body's)."""

    def __init__(self, source: BinaryIO, headers: Mapping[str, str], payload_sha256: str | None = None,
                 length: int | None = None, trailer: Callable[[], Mapping[str, str]] = dict) -> None:
        super().__init__()
        self._source = source
        self._md5_wanted = content_md5(headers.get("content-md5"))
        self._wanted = checksum_names(headers)
        self._sums = {name: CHECKSUMS[name]() for name in self._wanted}
        self._md5 = hashlib.md5()
        self._sha256 = hashlib.sha256() if payload_sha256 else None
        self._sha256_wanted = payload_sha256
        self._length = length
        self._trailer = trailer
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        count = self._source.readinto(buffer)
        if count:
            data = bytes(buffer[:count])
            self.size += count
            self._md5.update(data)
            if self._sha256 is not None:
                self._sha256.update(data)
            for digest in self._sums.values():
                digest.update(data)
        return count

    @property
    def etag(self) -> str:
        """The MD5 hex of the body read so far (all of it, once the store read it to its end)."""
        return self._md5.hexdigest()

    def check(self) -> None:
        """Raise the S3 error of the first digest or length that does not match (see the module docstring)."""
        if self._length is not None and self.size != self._length:
            raise S3Error("IncompleteBody", f"the body has {self.size} bytes, its headers said {self._length}")
        if self._md5_wanted is not None and self._md5.digest() != self._md5_wanted:
            raise S3Error("BadDigest", "The Content-MD5 you specified did not match what we received.")
        if self._sha256 is not None and self._sha256.hexdigest() != self._sha256_wanted:
            raise S3Error("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not "
                                                       "match what was computed.")
        trailer = self._trailer()
        for name, digest in self._sums.items():
            given = self._wanted[name] or trailer.get(f"x-amz-checksum-{name}")
            if given is None:
                raise S3Error("InvalidRequest", f"x-amz-trailer named x-amz-checksum-{name} but the trailer "
                                                f"did not carry it")
            if base64.b64encode(digest.digest()).decode() != given.strip():
                raise S3Error("BadDigest", f"The {name.upper()} you specified did not match the calculated "
                                           f"checksum.")
