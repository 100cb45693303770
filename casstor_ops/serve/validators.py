"""A file's validators (ETag: its hash; Last-Modified: its commit time) and the conditional requests they answer.

The ETag is the file hash (BLAKE2b-256 of the block hashes, hex, quoted): it
changes whenever the content does and never otherwise, so it is a strong
validator. A GET's ``If-None-Match`` naming it (or ``*``) is answered 304
Not Modified. ``If-Modified-Since`` is not used: the commit time has
one-second resolution in HTTP dates, the hash is exact (RFC 9110 lets a
server ignore the date when an ETag is there to compare).

A PUT's or DELETE's ``If-Match`` and ``If-None-Match`` (:class:`WritePrecondition`) are
evaluated as RFC 9110 section 13.2.2 orders them: ``If-Match`` (strong
comparison; ``*``: the file exists), else ``If-None-Match`` (weak
comparison; ``*``: the file does not exist, a create-only PUT). The server
checks a PUT's twice (:mod:`casstor_ops.serve.writes`): before reading the body, and
again just before the head write; a DELETE's once, under the key's lock.

Example::

    >>> not_modified('W/"ab", "cd"', '"cd"')
    True
    >>> WritePrecondition.of('"ab"', None).holds('"ab"'), WritePrecondition.of(None, "*").holds('"ab"')
    (True, False)

Failures: :meth:`WritePrecondition.check` raises
:class:`~casstor_ops.serve.status.PreconditionFailed` (412).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone
from email.utils import format_datetime

from casstor_ops.serve.status import PreconditionFailed
from casstor_ops.store.records import FileInfo

VERSION_HEADER = "x-casstor-version"  # the version a GET or HEAD answered with (for ?version= to name it again)


def etag(file_hash: bytes) -> str:
    """The ETag of a version whose file hash is ``file_hash``."""
    return f'"{file_hash.hex()}"'


def file_headers(head: FileInfo) -> dict[str, str]:
    """ETag, X-Casstor-Version and Last-Modified (when the head has a commit time) of the version ``head`` names."""
    headers = {"etag": etag(head.hash), VERSION_HEADER: str(head.version)}
    if head.committed_at is not None:
        # The driver returns naive datetimes in UTC.
        headers["last-modified"] = format_datetime(head.committed_at.replace(tzinfo=timezone.utc), usegmt=True)
    return headers


def _tags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def _weakly_named(tags: list[str], current: str) -> bool:
    return current in (tag.removeprefix("W/") for tag in tags)


def not_modified(if_none_match: str | None, current: str) -> bool:
    """Whether an ``If-None-Match`` value names ``current`` (weak comparison, as RFC 9110 asks for it)."""
    if if_none_match is None:
        return False
    tags = _tags(if_none_match)
    return "*" in tags or _weakly_named(tags, current)


@dataclass(frozen=True)
class WritePrecondition:
    """A PUT's or DELETE's ``If-Match`` and ``If-None-Match`` (None: header absent), checked against the ETag."""

    if_match: tuple[str, ...] | None
    if_none_match: tuple[str, ...] | None

    @classmethod
    def of(cls, if_match: str | None, if_none_match: str | None) -> "WritePrecondition | None":
        """The precondition of a request's headers; None when it has neither."""
        if if_match is None and if_none_match is None:
            return None
        return cls(None if if_match is None else tuple(_tags(if_match)),
                   None if if_none_match is None else tuple(_tags(if_none_match)))

    def holds(self, current: str | None) -> bool:
        """Whether the precondition holds when the file's ETag is ``current`` (None: no such file)."""
        if self.if_match is not None:
            # Strong comparison: a weak tag never matches (RFC 9110 13.1.1).
            return current is not None and ("*" in self.if_match or current in self.if_match)
        if self.if_none_match is not None:
            return current is None or not ("*" in self.if_none_match or _weakly_named(list(self.if_none_match),
                                                                                         current))
        return True

    def check(self, current: str | None, file_id: str) -> None:
        """Raise PreconditionFailed unless the precondition holds."""
        if not self.holds(current):
            now = "does not exist" if current is None else f"has ETag {current}"
            raise PreconditionFailed(f"precondition failed: {file_id!r} {now}")
