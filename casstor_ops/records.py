"""What the store's operations return (re-exported by :mod:`casstor_ops.store`).

Example::

    >>> StoreResult("a", 10, 1, 1, 10, 0.5).as_dict()["new_bytes"]
    10
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class StoreResult:
    """One ``put``: logical bytes and blocks, and how many of them were new to the store."""

    id: str
    bytes: int
    blocks: int
    new_blocks: int
    new_bytes: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RestoreResult:
    id: str
    bytes: int
    blocks: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FileInfo:
    """A file's committed head: the version readers see."""

    id: str
    version: uuid.UUID
    size: int
    hash: bytes
    blocks: int
    committed_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: hash as hex, version as text, time as ISO 8601 UTC."""
        return {"id": self.id, "version": str(self.version), "size": self.size, "hash": self.hash.hex(),
                "blocks": self.blocks,
                "committed_at": self.committed_at.isoformat() + "Z" if self.committed_at else None}


@dataclass(frozen=True)
class StoreStats:
    """Store-wide totals; exact integers (summed in Python, never in a 32-bit CQL aggregate)."""

    files: int
    logical_bytes: int
    unique_blocks: int
    stored_bytes: int

    @property
    def dedup_ratio(self) -> float:
        """Logical bytes per stored byte (1.0 for an empty store)."""
        return self.logical_bytes / self.stored_bytes if self.stored_bytes else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "dedup_ratio": round(self.dedup_ratio, 6)}
