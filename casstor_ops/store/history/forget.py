"""``casstor forget [--dry-run] [PREFIX]``: drop the versions no policy, snapshot or grace keeps.

For each ID (under PREFIX: read from the directory index, removed files'
entries included, never a scan, so an ID whose entry a killed store never
wrote is left for a forget without PREFIX; without one: a paged scan of
``versions``, whose partitions come whole, newest first), its versions are read and
:func:`~casstor_ops.store.history.policy.kept` decides with the ID's policy
(:mod:`.retention`), the snapshots over it (:mod:`.snapshots`) and the
grace, 2 x the commit bound; an S3 upload's part untouched for a week is kept by nothing
(:func:`~casstor_ops.store.engine.multipart.abandoned`). Each other version goes, oldest first: its
row (stamped when sent, so cells set on it after its commit go too; the row
is that version's alone, so nothing newer is shadowed), then its block list. An
ID left with no version (its newest was a delete marker nothing keeps) loses
its directory entry, deleted as of the marker's time, so the entry of a
store that lands meanwhile survives. Blocks are not touched: reclaim frees
the blocks no remaining version names.

Oldest first, so a forget killed midway leaves a newest-first history
whose dropped part is its tail: a delete marker is never dropped before the
versions under it (which would make one of them the head again). What it
left is dropped later: a block list without its row by the next reclaim (a
stale list), a removed file's entry without versions by the next forget.

IDs go 1,000 at a time (:data:`~casstor_ops.store.cql.row_requests.ROWS_AT_ONCE`):
their versions are read together, then dropped in rounds, the k-th delete of
every ID of the group in round k, each round sent together and acknowledged
whole before the next; so each ID's deletes keep the order above, as one
request after the other did (one round trip a delete: a forget of thousands
of IDs waited on each). The versions are decided on as of ``now`` (fixed
when forget starts), so reading a group ahead of its drop changes no
decision; a version stored meanwhile was not read, and is not dropped.

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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cassandra.cluster import Session

from casstor_ops.store.blocks.block_list import read
from casstor_ops.store.coordination.commit_bound import commit_bound_s
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.row_requests import ROWS_AT_ONCE, results, write_all
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.engine.catalog import scan
from casstor_ops.store.engine.multipart import abandoned
from casstor_ops.store.history.policy import Policy, Version, kept, policy_for
from casstor_ops.store.history.retention import policies
from casstor_ops.store.history.snapshots import snapshots
from casstor_ops.store.namespace.entries import Namespace, version_micros
from casstor_ops.store.namespace.listing import entries_under
from casstor_ops.store.records import inline_head

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
    lone_block: bytes | None = None  # its only block, when its row names it (casstor_ops.store.blocks.block_list)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "version": str(self.version), "deleted": self.deleted, "size": self.size}


@dataclass(frozen=True)
class History:
    """An ID's version rows, newest first, and the version its directory entry names (None: not read)."""

    id: str
    rows: list
    entry_version: uuid.UUID | None = None


@dataclass(frozen=True)
class VersionsToDrop:
    """An ID's version rows to delete, oldest first; then, unless ``withdraw_at`` is None (some version is left),
    its directory entry, as of that time (microseconds)."""

    id: str
    rows: Sequence
    withdraw_at: int | None = None


@dataclass(frozen=True)
class _Delete:
    """One delete of a drop, stamped when it is sent: the clock's time then, never before ``not_before``."""

    statement: Any
    key: tuple
    not_before: int = 0

    def request(self, now: int) -> Query:
        return Query(self.statement, (max(now, self.not_before), *self.key))


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

    def add(self, drop: VersionsToDrop, kept_versions: int) -> None:
        """Count one ID: its ``kept_versions`` and what ``drop`` drops."""
        self.ids += 1
        self.kept += kept_versions
        self.dropped += [Dropped(drop.id, r.version, bool(r.deleted), r.size or 0, r.blocks or 0,
                                 (r.stored_size or r.size) if inline_head(r.blocks, r.size) else 0, r.lone_block)
                         for r in drop.rows]
        if drop.withdraw_at is not None:
            self.withdrawn.append(drop.id)

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


def _groups(session: Session, st: Statements, prefix: str | None, at_once: int) -> Iterator[list[History]]:
    """The history of every ID under ``prefix`` (None: the whole store, scanned), ``at_once`` IDs a group (under a
    prefix, their versions read together)."""
    if prefix is None:
        histories = (History(file_id, list(rows)) for file_id, rows in
                     itertools.groupby(scan(session, st.all_versions), key=lambda r: r.id))
        while group := list(itertools.islice(histories, at_once)):
            yield group
        return
    entries = (entry.file for entry in entries_under(session, st, prefix, include_deleted=True))
    while chunk := list(itertools.islice(entries, at_once)):
        answers = results(session, [Query(st.file_versions, (file.id,)) for file in chunk], st.named_rows)
        yield [History(file.id, list(rows), file.version) for file, rows in zip(chunk, answers)]


def grace_micros(session: Session) -> int:
    """Forget's grace in this store, in microseconds: ``SAFETY.forget_grace_bounds`` of its commit bound."""
    return int(SAFETY.forget_grace_s(commit_bound_s(session)) * 1_000_000)


def forget_keeps(file_id: str, versions: Sequence[Version], rules: Mapping[str, Policy], pins: Iterable[int],
                 now_micros: int, grace: int) -> set:
    """The keys of ``file_id``'s ``versions`` (newest first) forget keeps at ``now_micros``: those its policy among
    ``rules``, the snapshots at ``pins`` and the grace keep, and none of an abandoned upload's (forget and the
    dedup report's forecast decide by this one rule).

    Example: ``forget_keeps("a", [Version(0, now, False)], {}, [], now, 0)`` is ``{0}`` (the head stays).
    """
    if versions and abandoned(file_id, versions[0].micros, now_micros):
        return set()
    return kept(versions, policy_for(file_id, rules), now_micros, pins, grace)


def forget(session: Session, namespace: Namespace, prefix: str | None = None, dry_run: bool = False,
           now: float | None = None, at_once: int = ROWS_AT_ONCE) -> ForgetReport:
    """Drop (unless ``dry_run``) every version under ``prefix`` (None: all) nothing keeps at ``now`` (default:
    the clock's time; seconds since 1970), ``at_once`` IDs together (1: one request at a time)."""
    st = Statements.for_session(session)
    now_micros = int((time.time() if now is None else now) * 1_000_000)
    grace = grace_micros(session)
    rules, pins = policies(session, st), snapshots(session, st)
    report = ForgetReport(dry_run)

    def decided(history: History) -> VersionsToDrop:
        file_id, rows = history.id, history.rows
        versions = [Version(i, version_micros(r.version), bool(r.deleted)) for i, r in enumerate(rows)]
        keep = forget_keeps(file_id, versions, rules, [s.at_micros for s in pins if file_id.startswith(s.prefix)],
                            now_micros, grace)
        drop = VersionsToDrop(file_id, [rows[i] for i in range(len(rows) - 1, -1, -1) if i not in keep],
                              None if keep else _withdraw_at(history))
        report.add(drop, len(keep))
        return drop

    for group in _groups(session, st, prefix, at_once):
        drops = [decided(history) for history in group]
        if not dry_run:
            drop_all(session, st, namespace, drops)
    if dry_run:
        _count_freed(session, st, report)
    return report


def _withdraw_at(history: History) -> int | None:
    """When the entry of an ID left with no version goes: its newest version's time (that of the entry it wrote; a
    store landing meanwhile writes a newer one, which survives), or the entry's own when no version is left to read
    (a forget stopped before its withdrawal: the next one withdraws it)."""
    if history.rows:
        return version_micros(history.rows[0].version)
    return None if history.entry_version is None else version_micros(history.entry_version)


def _deletes(st: Statements, drop: VersionsToDrop) -> list[_Delete]:
    """``drop``'s deletes in the order they must be acknowledged: each row, then its block list.

    Stamped when sent, not at the version's time: cells written to the row after it was committed (an S3
    object's tags, set later) must go with it, or they outlive it as a row of tags only. (id, version) is this
    version's alone, and so is its block list (written after the version's time): nothing newer is shadowed."""
    deletes = []
    for row in drop.rows:
        deletes.append(_Delete(st.delete_version_at, (drop.id, row.version), version_micros(row.version)))
        if row.blocks and row.lone_block is None:  # a lone block's list goes with its row
            deletes.append(_Delete(st.delete_block_list_at, (drop.id, row.version)))
    return deletes


def drop_all(session: Session, st: Statements, namespace: Namespace, drops: Iterable[VersionsToDrop]) -> None:
    """Delete every drop's rows in rounds: round k sends the k-th delete of each drop together and waits for
    all of them, so each drop's deletes are acknowledged in :func:`_deletes`' order; then the entry of each drop
    with a ``withdraw_at``, as of that time."""
    drops = list(drops)
    deletes = [_deletes(st, drop) for drop in drops]
    for k in range(max(map(len, deletes), default=0)):
        now = int(time.time() * 1_000_000)
        write_all(session, [each[k].request(now) for each in deletes if k < len(each)])
    write_all(session, (namespace.withdrawal(drop.id, drop.withdraw_at)
                        for drop in drops if drop.withdraw_at is not None))


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
