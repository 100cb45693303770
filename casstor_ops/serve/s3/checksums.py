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
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO

from awscrt import checksums as crt_checksums

from casstor_ops.serve.s3.errors import S3Error


@dataclass(frozen=True)
class _CrcKind:
    """A CRC S3 offers: how to continue one over more bytes, how to combine two, and its width in bits."""

    update: Callable[[bytes | memoryview, int], int]
    combine: Callable[[int, int, int], int]
    width: int


# Compiled CRCs only: a table-driven CRC32C or CRC64NVME in Python ran at ~3 MB/s here (1.7 s of a 5 MiB part,
# holding the GIL, so every request of that server waited). Measured on 64 MiB: zlib's CRC32 7.1 GB/s (awscrt's
# 3.5), awscrt's CRC32C 27 GB/s and CRC64NVME 35 GB/s; both let go of the GIL.
CRCS = {"crc32": _CrcKind(zlib.crc32, crt_checksums.combine_crc32, 32),
        "crc32c": _CrcKind(crt_checksums.crc32c, crt_checksums.combine_crc32c, 32),
        "crc64nvme": _CrcKind(crt_checksums.crc64nvme, crt_checksums.combine_crc64nvme, 64)}


class _Crc:
    """One of :data:`CRCS` as a hashlib-like object."""

    def __init__(self, kind: _CrcKind) -> None:
        self._kind = kind
        self._value = 0

    def update(self, data: bytes | memoryview) -> None:
        self._value = self._kind.update(data, self._value)

    def digest(self) -> bytes:
        return self._value.to_bytes(self._kind.width // 8, "big")


CHECKSUMS: dict[str, Callable[[], object]] = {
    **{name: partial(_Crc, kind) for name, kind in CRCS.items()}, "sha1": hashlib.sha1, "sha256": hashlib.sha256,
}
FULL_OBJECT, COMPOSITE = "FULL_OBJECT", "COMPOSITE"


def combine_crc(algorithm: str, crc1: int, crc2: int, length2: int) -> int:
    """The CRC of ``A + B`` from A's CRC ``crc1``, B's ``crc2`` and B's length (for any of :data:`CRCS`): the
    parts' CRCs give the object's without reading its bytes again."""
    return CRCS[algorithm].combine(crc1, crc2, length2)


@dataclass(frozen=True)
class Checksum:
    """An object's checksum as S3 answers it: the algorithm (``sha256``), its ``type`` (FULL_OBJECT: of all the
    bytes; COMPOSITE: of the parts' checksums, ``-N`` after it) and the base64 ``value``."""

    algorithm: str
    value: str
    type: str = FULL_OBJECT

    def stored(self) -> str:
        """As the ``versions.checksum`` column keeps it."""
        return f"{self.algorithm} {self.type} {self.value}"

    @classmethod
    def parse(cls, stored: str | None) -> Checksum | None:
        if not stored:
            return None
        algorithm, kind, value = stored.split(" ")
        return cls(algorithm, value, kind)

    def headers(self) -> dict[str, str]:
        return {f"x-amz-checksum-{self.algorithm}": self.value, "x-amz-checksum-type": self.type}

    def fields(self) -> dict[str, str]:
        """As S3's XML names them (``ChecksumSHA256``, ``ChecksumType``)."""
        return {**self.value_field(), "ChecksumType": self.type}

    def listed_fields(self) -> dict[str, str]:
        """As a listing's Contents names it (``ChecksumAlgorithm``, ``ChecksumType``): the algorithm, not the value."""
        return {"ChecksumAlgorithm": self.algorithm.upper(), "ChecksumType": self.type}

    def value_field(self) -> dict[str, str]:
        """The value alone as S3's XML names it (``ChecksumSHA256``): a part's in ListParts."""
        return {f"Checksum{self.algorithm.upper()}": self.value}


def stored_checksum(checksum: Checksum | None) -> str | None:
    """``checksum`` as the ``versions.checksum`` column keeps it (None: none)."""
    return checksum.stored() if checksum is not None else None


# The checksum types S3 allows a multipart upload, by algorithm; the last one is its default.
_TYPES = {"crc32": (FULL_OBJECT, COMPOSITE), "crc32c": (FULL_OBJECT, COMPOSITE), "crc64nvme": (FULL_OBJECT,),
          "sha1": (COMPOSITE,), "sha256": (COMPOSITE,)}


def checksum_type(algorithm: str, wanted: str | None) -> str:
    """The checksum type of a multipart upload: ``wanted`` (x-amz-checksum-type), else S3's default for the
    algorithm; InvalidRequest for an algorithm or a pair S3 refuses."""
    kind = (wanted or _TYPES[_known(algorithm)][-1]).upper()
    if kind not in _TYPES[algorithm]:
        raise S3Error("InvalidRequest", f"the checksum type {kind} is not supported for {algorithm.upper()}")
    return kind


def multipart_checksum(algorithm: str, kind: str, parts: list[tuple[int, str]]) -> Checksum:
    """The checksum of an object made of ``parts`` (each part's size and base64 checksum): COMPOSITE, the
    algorithm over the parts' digests then ``-N``; FULL_OBJECT, the parts' CRCs combined."""
    if kind == COMPOSITE:
        digest = CHECKSUMS[algorithm]()
        for _, value in parts:
            digest.update(base64.b64decode(value))
        return Checksum(algorithm, base64.b64encode(digest.digest()).decode() + f"-{len(parts)}", kind)
    crc = None
    for size, value in parts:
        part = int.from_bytes(base64.b64decode(value), "big")
        crc = part if crc is None else combine_crc(algorithm, crc, part, size)
    width = CRCS[algorithm].width
    return Checksum(algorithm, base64.b64encode(crc.to_bytes(width // 8, "big")).decode(), kind)


def requested_algorithm(headers: Mapping[str, str]) -> str | None:
    """The algorithm ``x-amz-checksum-algorithm`` asks the server to compute (CreateMultipartUpload, CopyObject),
    lower-case; None: none. One this server does not know: InvalidRequest."""
    algorithm = (headers.get("x-amz-checksum-algorithm") or "").lower() or None
    return _known(algorithm) if algorithm is not None else None


def _known(algorithm: str) -> str:
    if algorithm not in CHECKSUMS:
        raise S3Error("InvalidRequest", f"the checksum algorithm {algorithm!r} is not supported here "
                                        f"(supported: {', '.join(sorted(CHECKSUMS))})")
    return algorithm


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
    trailing headers once the body ended (an aws-chunked body's); ``also``: an algorithm to compute even if the
    request names none (a multipart upload's, for each part)."""

    def __init__(self, source: BinaryIO, headers: Mapping[str, str], payload_sha256: str | None = None,
                 length: int | None = None, trailer: Callable[[], Mapping[str, str]] = dict,
                 also: str | None = None) -> None:
        super().__init__()
        self._source = source
        self._md5_wanted = content_md5(headers.get("content-md5"))
        self._wanted = checksum_names(headers)
        self._sums = {name: CHECKSUMS[name]() for name in self._wanted}
        if also is not None:
            self._sums.setdefault(also, CHECKSUMS[also]())
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
            data = memoryview(buffer)[:count]  # digested in place: no copy of the body
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
        for name in self._wanted:
            given = self._wanted[name] or trailer.get(f"x-amz-checksum-{name}")
            if given is None:
                raise S3Error("InvalidRequest", f"x-amz-trailer named x-amz-checksum-{name} but the trailer "
                                                f"did not carry it")
            if self._value(name) != given.strip():
                raise S3Error("BadDigest", f"The {name.upper()} you specified did not match the calculated "
                                           f"checksum.")

    def _value(self, name: str) -> str:
        return base64.b64encode(self._sums[name].digest()).decode()

    def checksum(self, algorithm: str | None = None) -> Checksum | None:
        """The body's checksum by ``algorithm`` (one it computed), else by the first the request named (None:
        it named none). Once the body was read and checked."""
        name = algorithm or next(iter(self._wanted), None)
        return Checksum(name, self._value(name)) if name is not None else None
