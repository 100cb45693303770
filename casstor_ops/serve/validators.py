"""A file's validators (ETag: its hash; Last-Modified: its commit time) and the conditional GET they answer.

The ETag is the file hash (BLAKE2b-256 of the block hashes, hex, quoted): it
changes whenever the content does and never otherwise, so it is a strong
validator. ``If-None-Match`` naming it (or ``*``) is answered 304 Not
Modified. ``If-Modified-Since`` is not used: the commit time has one-second
resolution in HTTP dates, the hash is exact (RFC 9110 lets a server ignore
the date when an ETag is there to compare).

Example::

    >>> not_modified('W/"ab", "cd"', '"cd"')
    True
"""

from __future__ import annotations

from datetime import timezone
from email.utils import format_datetime

from casstor_ops.store.records import FileInfo


def etag(head: FileInfo) -> str:
    return f'"{head.hash.hex()}"'


def file_headers(head: FileInfo) -> dict[str, str]:
    """ETag and Last-Modified (when the head has a commit time) of the version ``head`` names."""
    headers = {"etag": etag(head)}
    if head.committed_at is not None:
        # The driver returns naive datetimes in UTC.
        headers["last-modified"] = format_datetime(head.committed_at.replace(tzinfo=timezone.utc), usegmt=True)
    return headers


def not_modified(if_none_match: str | None, current: str) -> bool:
    """Whether an ``If-None-Match`` value names ``current`` (weak comparison, as RFC 9110 asks for it)."""
    if if_none_match is None:
        return False
    tags = [tag.strip() for tag in if_none_match.split(",")]
    return "*" in tags or current in (tag.removeprefix("W/") for tag in tags)
