"""What the store's operations return (re-exported by :mod:`casstor_ops.store.api`).

Example::

    >>> StoreResult("a", 10, 1, 1, 10, 0.5, 4).as_dict()["new_stored_bytes"]
    4
"""

from __future__ import annotations

import os
import stat
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, NamedTuple

# A file changed this recently when it is opened may change again within the same tick of the file system's
# clock (coarse: milliseconds) without its change time moving: its inode and change time are not recorded.
RACY_CTIME_NS = 1_000_000_000


@dataclass(frozen=True)
class StoreResult:
    """One ``put``: logical bytes and blocks, how many of them were new to the store, and the bytes those new
    blocks take as stored (after compression).

    ``hash`` is the committed version's file hash (an HTTP server's ETag); it is not part of ``as_dict``, the
    ``--json`` result of ``casstor store``.
    """

    id: str
    bytes: int
    blocks: int
    new_blocks: int
    new_bytes: int
    seconds: float
    new_stored_bytes: int = 0
    hash: bytes | None = field(default=None, repr=False)
    version: uuid.UUID | None = field(default=None, repr=False)  # the committed version (an S3 versionId)

    def as_dict(self) -> dict[str, Any]:
        # Every field is a scalar: dataclasses.asdict's recursive copy took 15 us where this takes 1 us, and an
        # HTTP PUT calls it once (4 % of the server's GIL time a 64 KiB PUT under wrk, py-spy, 2026-12-07).
        return {name: getattr(self, name) for name in _STORE_RESULT_FIELDS}


_STORE_RESULT_FIELDS = tuple(f.name for f in fields(StoreResult) if f.name not in ("hash", "version"))


@dataclass(frozen=True)
class RestoreResult:
    id: str
    bytes: int
    blocks: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FileAttributes:
    """A stored file's permission bits (``st_mode & 0o7777``) and modification time, as its source had them.

    Recorded when a file is stored from a path, applied when it is restored to one. ``ino`` and ``ctime_ns`` (the
    source's inode and change time when it was opened) are recorded too, for an unchanged re-run to skip the file
    without reading it (:mod:`casstor_ops.store.bulk.tree_files`); they are left out (None) for a file changed
    less than ``RACY_CTIME_NS`` before it was opened, which a change in the same clock tick could hide. They are
    no part of the comparison: two files with the same mode and mtime have the same attributes.

    Example::

        >>> FileAttributes.of(os.stat("notes.txt"))      # doctest: +SKIP
        FileAttributes(mode=384, mtime_ns=1700000000123456789)
    """

    mode: int
    mtime_ns: int
    ino: int | None = field(default=None, compare=False, repr=False)
    ctime_ns: int | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, status: os.stat_result) -> "FileAttributes":
        if time.time_ns() - status.st_ctime_ns < RACY_CTIME_NS:
            return cls(stat.S_IMODE(status.st_mode), status.st_mtime_ns)
        return cls(stat.S_IMODE(status.st_mode), status.st_mtime_ns, status.st_ino, status.st_ctime_ns)

    def unchanged(self, status: os.stat_result) -> bool:
        """Whether ``status`` is the file these attributes were recorded from, untouched since: same mode, mtime,
        inode and change time (never true without a recorded inode and change time)."""
        return self.ino is not None and (self.ino, self.ctime_ns, self.mtime_ns, self.mode) == \
            (status.st_ino, status.st_ctime_ns, status.st_mtime_ns, stat.S_IMODE(status.st_mode))


def inline_head(blocks: int | None, size: int | None) -> bool:
    """Whether a head of ``blocks`` blocks and ``size`` bytes is an inline file's: content in its head row, no
    blocks (:mod:`casstor_ops.store.engine.inline`).

    Example: ``inline_head(0, 5)`` is True, ``inline_head(0, 0)`` False.
    """
    return blocks == 0 and size is not None and size > 0


@dataclass(frozen=True)
class InlineContent:
    """An inline file's content as its head row keeps it: ``payload`` encoded by ``codec`` (None: raw).

    See :mod:`casstor_ops.store.engine.inline`.
    """

    codec: str | None
    payload: bytes = field(repr=False)


def utc_iso(at: datetime) -> str:
    """``at`` as ISO 8601 UTC in milliseconds, a ``timestamp``'s precision, the form every time casstor prints in
    JSON or S3's XML takes; a naive ``at`` is UTC, as the driver reads a ``timestamp``.

    Always with its fraction: ``isoformat()`` leaves it out on a whole second, and such a time then sorted as text
    after the later times of its own second (``"...:51Z" < "...:51.337Z"`` is false).

    Example::

        >>> utc_iso(datetime(2026, 12, 7, 21, 45, 51)), utc_iso(datetime(2026, 12, 7, 21, 45, 51, 337999, timezone.utc))
        ('2026-12-07T21:45:51.000Z', '2026-12-07T21:45:51.337Z')
    """
    if at.tzinfo is not None:
        at = at.astimezone(timezone.utc).replace(tzinfo=None)
    return at.isoformat(timespec="milliseconds") + "Z"


@dataclass(frozen=True)
class FileInfo:
    """A file's committed head: the version readers see.

    ``attributes`` is None for a file stored from a stream (stdin, a file
    object) or by a casstor that did not record them. ``inline`` is an inline
    file's content when the head was read with it (a single head's read is;
    a listing's is not).
    """

    id: str
    version: uuid.UUID
    size: int
    hash: bytes
    blocks: int
    committed_at: datetime | None
    attributes: FileAttributes | None = None
    inline: InlineContent | None = field(default=None, repr=False, compare=False)
    lone_block: bytes | None = field(default=None, repr=False, compare=False)  # casstor_ops.store.blocks.block_list

    @property
    def is_inline(self) -> bool:
        """Whether the file's content is in its head row (no blocks, no block list).

        See :mod:`casstor_ops.store.engine.inline`.
        """
        return inline_head(self.blocks, self.size)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: hash as hex, version as text, time as ISO 8601 UTC in milliseconds (Cassandra's precision),
        mode as octal text (``"0600"``)."""
        attributes = self.attributes
        return {"id": self.id, "version": str(self.version), "size": self.size, "hash": self.hash.hex(),
                "blocks": self.blocks,
                "committed_at": utc_iso(self.committed_at) if self.committed_at else None,
                "mode": f"{attributes.mode:04o}" if attributes else None,
                "mtime_ns": attributes.mtime_ns if attributes else None}


@dataclass(frozen=True)
class ObjectMeta:
    """An S3 object's attributes, kept in its version row (``casstor serve --s3``): ``etag`` (the MD5 hex of its
    bytes), ``content_type``, ``user_meta`` (``x-amz-meta-*`` without the prefix), ``headers`` (the HTTP headers
    a GET answers with as they were written: Cache-Control, Expires, ...), ``tags``, ``checksum`` (as
    ``casstor_ops.serve.s3.checksums.Checksum`` stores it) and a multipart object's ``parts`` (each part's size
    and checksum). Other files have none; a delete marker has every attribute empty (``etag`` None) but
    ``null_version``. :meth:`columns` are its values in ``insert_version_meta``'s order, every field's."""

    etag: str | None = None
    content_type: str | None = None
    user_meta: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    checksum: str | None = None
    parts: list[tuple[int, str | None]] | None = None
    null_version: bool = False  # S3's "null" version (its bucket's versioning not Enabled): casstor_ops.serve.s3

    def columns(self) -> tuple:
        """Every field, in order: the S3 columns of a version row (one per field, so none can be left out)."""
        return tuple(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True)
class VersionInfo:
    """One version of a file, as ``casstor ls --versions`` shows it: ``file`` (its head columns then), and whether
    it is a delete marker (the file was removed there; ``file`` has no content then). ``stored_size`` is an inline
    version's content as kept (None otherwise)."""

    file: FileInfo
    deleted: bool = False
    stored_size: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**self.file.as_dict(), "deleted": self.deleted}


@dataclass(frozen=True)
class StoreStats:
    """Store-wide totals; exact integers (summed in Python, never in a 32-bit CQL aggregate).

    Three byte figures: ``logical_bytes`` (the committed files' sizes),
    ``unique_bytes`` (their blocks once each: after dedup; and inline files'
    content, once per file) and ``stored_bytes`` (those as kept: after
    compression). ``unique_blocks`` counts blocks only.
    """

    files: int
    logical_bytes: int
    unique_blocks: int
    unique_bytes: int
    stored_bytes: int

    @property
    def dedup_ratio(self) -> float:
        """Logical bytes per unique byte (1.0 for an empty store)."""
        return self.logical_bytes / self.unique_bytes if self.unique_bytes else 1.0

    @property
    def compression_ratio(self) -> float:
        """Unique bytes per stored byte (1.0 for an empty store)."""
        return self.unique_bytes / self.stored_bytes if self.stored_bytes else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "dedup_ratio": round(self.dedup_ratio, 6),
                "compression_ratio": round(self.compression_ratio, 6)}


class VersionRow(NamedTuple):
    """The values of ``insert_version``, in its order: a version row as it is written (the last, ``written_at``,
    its ``USING TIMESTAMP``: the version's own time). ``content``, ``codec``, ``stored_size``: an inline file's
    (:func:`~casstor_ops.store.engine.inline.head_columns`: null or unset for one in blocks)."""

    id: str
    version: uuid.UUID
    size: int
    hash: bytes
    blocks: int
    committed_at: datetime
    mode: int | None
    mtime_ns: int | None
    ino: int | None
    ctime_ns: int | None
    content: object
    codec: object
    stored_size: object
    deleted: bool
    lone_block: bytes | None
    written_at: int

    def head(self, attributes: FileAttributes | None) -> FileInfo:
        """The committed head this row makes, with ``attributes`` (the caller's: a row keeps only their values)."""
        return FileInfo(self.id, self.version, self.size, self.hash, self.blocks, self.committed_at, attributes,
                        lone_block=self.lone_block)
