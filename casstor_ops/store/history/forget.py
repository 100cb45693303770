"""``casstor forget [--dry-run] [PREFIX]``: drop the versions no policy, snapshot or grace keeps.

For each ID (under PREFIX: read from the directory index, removed files'
entries included, never a scan, so an ID whose entry a killed store never
wrote is left for a forget without PREFIX; without one: a paged scan of
``versions``, whose partitions come whole, newest first), its versions are read and
:func:`~casstor_ops.store.history.policy.kept` decides with the ID's policy
(:mod:`.retention`), the snapshots over it (:mod:`.snapshots`) and the
grace, 2 x the commit bound; an S3 upload's part untouched for a week is kept by nothing
(:func:`~casstor_ops.store.multipart.abandoned`). Each other version goes, oldest first: its
row (``USING TIMESTAMP`` its own time, the time it was written with, so the
delete removes that row and shadows nothing newer), then its block list. An
ID left with no version (its newest was a delete marker nothing keeps) loses
its directory entry, deleted as of the marker's time, so the entry of a
store that lands meanwhile survives. Blocks are not touched: reclaim frees
the blocks no remaining version names.

Oldest first, so a forget killed midway leaves a newest-first history
whose dropped part is its tail: a delete marker is never dropped before the
versions under it (which would make one of them the head again). What it
left (a block list without its row, a removed file's entry without
versions) is dropped by the next forget or reclaim.

``dry_run`` deletes nothing and also works out what the drop would free:
the blocks only the dropped versions name (a paged scan of the light
columns of every block list: O(store), the one cost of a dry run) and the
inline content of dropped versions.

Example::

    >>> report = forget(session, namespace, "backups/", dry_run=True)     # doctest: +SKIP
    >>> print(report.table())                                              # doctest: +SKIP

Failures: the driver's errors propagate; a forget stopped by one is safe to
run again.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cassandra.cluster import Session

from casstor_ops.store.block_list import read
from casstor_ops.store.catalog import scan
from casstor_ops.store.coordination.commit_bound import commit_bound_s
from casstor_ops.store.history.policy import Version, kept, policy_for
from casstor_ops.store.history.retention import policies
from casstor_ops.store.history.snapshots import snapshots
from casstor_ops.store.namespace.entries import Namespace, version_micros
from casstor_ops.store.multipart import abandoned
from casstor_ops.store.namespace.listing import entries_under
from casstor_ops.store.records import inline_head
from casstor_ops.store.statements import Statements

DROPS_SHOWN = 20  # versions listed by the report's table; --json lists every one


@dataclass(frozen=True)
class Dropped:
    """A version forget drops (or would)."""

    id: str
    version: uuid.UUID
    deleted: bool
    size: int
    blocks: int
    inline_bytes: int  # an inline version's content as kept: freed with its row
    lone_block: bytes | None = None  # its only block, when its row names it (casstor_ops.store.block_list)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "version": str(self.version), "deleted": self.deleted, "size": self.size}


@dataclass
class ForgetReport:
    """What forget dropped (or, a dry run, would drop) and, a dry run, what that frees."""

    dry_run: bool
    ids: int = 0
    kept: int = 0
    dropped: list[Dropped] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    freed_blocks: int | None = None
    freed_bytes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "ids": self.ids, "kept": self.kept,
                "dropped": [d.as_dict() for d in self.dropped], "withdrawn": self.withdrawn,
                "freed_blocks": self.freed_blocks, "freed_bytes": self.freed_bytes}

    def table(self) -> str:
        verb = "would drop" if self.dry_run else "dropped"
        lines = [f"forget: {self.ids:,} IDs, {self.kept:,} versions kept, {verb} {len(self.dropped):,} "
                 f"({len(self.withdrawn):,} IDs left with none)"]
        lines += [f"  {verb} {d.id} {d.version}{' (delete marker)' if d.deleted else f' {d.size:,} bytes'}"
                  for d in self.dropped[:DROPS_SHOWN]]
        if len(self.dropped) > DROPS_SHOWN:
            lines.append(f"  ... and {len(self.dropped) - DROPS_SHOWN:,} more")
        if self.freed_bytes is not None:
            lines.append(f"  would free {self.freed_blocks:,} blocks, {self.freed_bytes:,} bytes "
                         f"(blocks no kept version names, and inline content; freed by the next reclaim)")
        return "\n".join(lines)


def _versions_by_id(session: Session, st: Statements, prefix: str | None) -> Iterator[tuple[str, list]]:
    """``(id, version rows newest first)`` of every ID under ``prefix`` (None: the whole store, scanned)."""
    if prefix is None:
        yield from ((file_id, list(rows)) for file_id, rows in
                    itertools.groupby(scan(session, st.all_versions), key=lambda r: r.id))
        return
    for entry in entries_under(session, st, prefix, include_deleted=True):
        rows = list(session.execute(st.file_versions, (entry.file.id,), execution_profile=st.named_rows))
        yield entry.file.id, rows


def forget(session: Session, namespace: Namespace, prefix: str | None = None, dry_run: bool = False,
           now: float | None = None) -> ForgetReport:
    """Drop (unless ``dry_run``) every version under ``prefix`` (None: all) nothing keeps at ``now`` (default:
    the clock's time; seconds since 1970)."""
    st = Statements.for_session(session)
    now_micros = int((time.time() if now is None else now) * 1_000_000)
    grace = 2 * commit_bound_s(session) * 1_000_000
    rules, pins = policies(session, st), snapshots(session, st)
    report = ForgetReport(dry_run)
    for file_id, rows in _versions_by_id(session, st, prefix):
        versions = [Version(i, version_micros(r.version), bool(r.deleted)) for i, r in enumerate(rows)]
        keep = kept(versions, policy_for(file_id, rules), now_micros,
                    [s.at_micros for s in pins if file_id.startswith(s.prefix)], grace)
        if versions and abandoned(file_id, versions[0].micros, now_micros):
            keep = set()
        report.ids += 1
        report.kept += len(keep)
        drop = [rows[i] for i in range(len(rows) - 1, -1, -1) if i not in keep]  # oldest first
        report.dropped += [Dropped(file_id, r.version, bool(r.deleted), r.size or 0, r.blocks or 0,
                                   (r.stored_size or r.size) if inline_head(r.blocks, r.size) else 0, r.lone_block)
                           for r in drop]
        if drop and not keep:
            report.withdrawn.append(file_id)
        if not dry_run:
            drop_versions(session, st, namespace, file_id, drop, gone=not keep)
    if dry_run:
        _count_freed(session, st, report)
    return report


def drop_versions(session: Session, st: Statements, namespace: Namespace, file_id: str, rows: list,
                  gone: bool) -> None:
    """Delete ``rows`` (oldest first): each row, then its block list, as of now; then, if ``gone``, the entry as of
    the newest's time."""
    for row in rows:
        # Stamped now, not at the version's time: cells written to the row after it was committed (an S3 object's
        # tags, set later) must go with it, or they outlive it as a row of tags only. (id, version) is this
        # version's alone, and so is its block list (written after the version's time): nothing newer is shadowed.
        now = int(time.time() * 1_000_000)
        session.execute(st.delete_version_at, (max(now, version_micros(row.version)), file_id, row.version))
        if row.blocks and row.lone_block is None:  # a lone block's list goes with its row
            session.execute(st.delete_block_list_at, (now, file_id, row.version))
    if gone and rows:
        namespace.withdraw(file_id, version_micros(rows[-1].version))


def _count_freed(session: Session, st: Statements, report: ForgetReport) -> None:
    """Set the report's freed figures: blocks named by dropped versions and no other list, and inline content."""
    dropped = {(d.id, d.version): d for d in report.dropped if d.blocks}
    sizes = {digest: size for d in dropped.values() for _, digest, size in read(session, st, d)}
    for row in itertools.chain(scan(session, st.all_block_list_hashes), scan(session, st.all_lone_blocks)):
        digest = row[2]  # a list row's hash, or a version row's lone block (null for most)
        if digest in sizes and (row.id, row.version) not in dropped:
            del sizes[digest]
    report.freed_blocks = len(sizes)
    report.freed_bytes = sum(sizes.values()) + sum(d.inline_bytes for d in report.dropped)
