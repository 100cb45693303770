"""Point in time: reading a ``--version`` and an ``--at``, and comparing a tree at two times (``casstor diff``).

Every store of an ID makes a version (a timeuuid, its time the moment its
block list began); ``Store.stat(id, at=T)`` is the newest version whose
time is at most T, ``Store.list(prefix, at=T)`` every file under a prefix
so. A time is ISO 8601 (``2026-11-26T14:00:00+01:00``, ``...Z``, a date
alone); one without a zone is UTC, whatever the machine's zone, so a
command means the same instant everywhere. :func:`compare` is the pure
part of a diff: two ``{id: FileInfo}`` maps in, the files added, removed
and changed (by file hash) out.

Example::

    >>> parse_time("2026-11-26T14:00:00")
    datetime.datetime(2026, 11, 26, 14, 0, tzinfo=datetime.timezone.utc)
    >>> compare({}, {}).as_dict()["changed"]
    []

Failures: a time or version that cannot be read raises
:class:`~casstor_ops.errors.CasstorError` with exit code 2 (a usage error;
HTTP 400 for the server) and one line naming the value.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.store.records import FileInfo


def parse_time(text: str) -> datetime:
    """An ISO 8601 time as an aware datetime (no zone given: UTC)."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CasstorError(f"time {text!r}: expected ISO 8601, e.g. 2026-11-26T14:00:00Z "
                           f"(no zone: UTC)", EXIT_USAGE) from None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when


def parse_version(text: str) -> uuid.UUID:
    """A version as ``casstor ls --versions`` prints it (a time-based UUID)."""
    try:
        version = uuid.UUID(text.strip())
    except ValueError:
        version = None
    if version is None or version.version != 1:
        raise CasstorError(f"version {text!r}: expected a version as 'casstor ls --versions' prints it "
                           f"(a time-based UUID)", EXIT_USAGE)
    return version


@dataclass(frozen=True)
class TreeDiff:
    """What changed under a prefix between two times: files added, removed, and changed (before, after)."""

    added: list[FileInfo]
    removed: list[FileInfo]
    changed: list[tuple[FileInfo, FileInfo]]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def totals(self) -> dict[str, int]:
        """Counts, and bytes: added files' sizes, removed files' sizes, changed files' sizes after."""
        return {"added": len(self.added), "added_bytes": sum(f.size for f in self.added),
                "removed": len(self.removed), "removed_bytes": sum(f.size for f in self.removed),
                "changed": len(self.changed), "changed_bytes": sum(after.size for _, after in self.changed)}

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: each file's id, size(s) and version(s), then :meth:`totals`."""
        return {"added": [_side(f) for f in self.added], "removed": [_side(f) for f in self.removed],
                "changed": [{"id": before.id, "from": _side(before), "to": _side(after)}
                            for before, after in self.changed],
                "totals": self.totals()}

    def lines(self) -> list[str]:
        """One line a file (``+`` added, ``-`` removed, ``M`` changed: size before -> after), in ID order."""
        rows = [(f.id, f"+ {f.size:>14}  {f.id}") for f in self.added]
        rows += [(f.id, f"- {f.size:>14}  {f.id}") for f in self.removed]
        rows += [(a.id, f"M {a.size:>14}  {a.id} (was {b.size} bytes)") for b, a in self.changed]
        return [line for _, line in sorted(rows)]

    def summary(self) -> str:
        t = self.totals()
        return (f"diff: {t['added']} added ({t['added_bytes']} bytes), {t['removed']} removed "
                f"({t['removed_bytes']} bytes), {t['changed']} changed ({t['changed_bytes']} bytes now)")


def _side(info: FileInfo) -> dict[str, Any]:
    return {"id": info.id, "size": info.size, "version": str(info.version), "hash": info.hash.hex()}


def compare(before: Mapping[str, FileInfo], after: Mapping[str, FileInfo]) -> TreeDiff:
    """The files of ``after`` not in ``before`` (added), of ``before`` not in ``after`` (removed), and in both with
    another file hash (changed; a new version with the same content is no change), each in ID order.

    Example::

        >>> compare({"a": old_a, "b": b}, {"a": new_a, "c": c}).totals()["changed"]   # doctest: +SKIP
        1
    """
    return TreeDiff(added=[after[i] for i in sorted(after.keys() - before.keys())],
                    removed=[before[i] for i in sorted(before.keys() - after.keys())],
                    changed=[(before[i], after[i]) for i in sorted(before.keys() & after.keys())
                             if before[i].hash != after[i].hash])
