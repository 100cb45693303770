"""Snapshots: a name, a prefix and an instant, pinning each ID's head at that instant against forget.

``casstor_meta.snapshots (name PK, prefix, at)`` holds no version: a
snapshot pins, for each ID under its prefix, the version that was the head
at ``at`` (:func:`~casstor_ops.store.history.policy.pinned`), which forget
reads when it decides (:mod:`.forget`). ``at`` is the instant the snapshot is
taken, at the millisecond a ``timestamp`` keeps.

Why a snapshot is safe against a forget running meanwhile: the version it
pins may be superseded right after ``at``, and a forget that read the
snapshots before this one's row landed would not know it pins that version.
So :func:`take` requires its row to be acknowledged less than the commit
bound B after ``at`` (else it deletes it again and fails), and forget keeps
every version superseded less than 2 B before it started (the grace,
``docs/safety.md``): such a forget started before ``at + B`` and so keeps
whatever was the head at ``at``.

Example::

    >>> take(session, st, "photos/", "before-cleanup").at                 # doctest: +SKIP
    datetime.datetime(2026, 11, 26, 14, 0, 0, 123000, tzinfo=datetime.timezone.utc)

Failures: a name already taken, or a snapshot whose row took longer than the
commit bound, raises :class:`~casstor_ops.errors.CasstorError` (nothing is
kept); removing an unknown name raises :class:`~casstor_ops.errors.NotFoundError`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from cassandra.cluster import Session

from casstor_ops.errors import CasstorError, NotFoundError
from casstor_ops.store.coordination.commit_bound import commit_bound_s
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.records import utc_iso


@dataclass(frozen=True)
class Snapshot:
    """A snapshot: it pins the heads under ``prefix`` at ``at`` (UTC, millisecond precision)."""

    name: str
    prefix: str
    at: datetime

    @property
    def at_micros(self) -> int:
        return int(round(self.at.timestamp() * 1000)) * 1000

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "prefix": self.prefix, "at": utc_iso(self.at)}


def take(session: Session, st: Statements, prefix: str, name: str | None = None) -> Snapshot:
    """Pin the heads under ``prefix`` as they are now, as ``name`` (default: the instant, ISO 8601)."""
    bound = commit_bound_s(session)
    now = time.time()
    started = time.monotonic()
    at = datetime.fromtimestamp(int(now * 1000) / 1000, timezone.utc)
    snapshot = Snapshot(name or utc_iso(at), prefix, at)
    if not snapshot.name:
        raise CasstorError("a snapshot needs a name (give --name, or none for the instant)")
    if not session.execute(st.insert_snapshot, (snapshot.name, prefix, at)).was_applied:
        raise CasstorError(f"a snapshot named {snapshot.name!r} exists (see 'casstor snapshots')")
    if time.monotonic() - started >= bound:
        session.execute(st.delete_snapshot, (snapshot.name,))
        raise CasstorError(f"snapshot {snapshot.name!r} took longer than the commit bound to record, so a forget "
                           f"may have missed it: not kept; take it again")
    return snapshot


def snapshots(session: Session, st: Statements) -> list[Snapshot]:
    """Every snapshot, oldest first."""
    found = [Snapshot(r.name, r.prefix, r.at.replace(tzinfo=timezone.utc)) for r in session.execute(st.all_snapshots)]
    return sorted(found, key=lambda s: (s.at, s.name))


def remove(session: Session, st: Statements, name: str) -> None:
    """Drop the snapshot ``name``: what it pinned is left to the policies (the next forget may drop it)."""
    if not session.execute(st.delete_snapshot, (name,)).was_applied:
        raise NotFoundError(f"no snapshot named {name!r} (see 'casstor snapshots')")
