"""Multipart objects: parts kept as hidden files, and the commit of their block lists concatenated.

An S3 multipart upload's parts are stored like any file (chunked,
deduplicated), each under a hidden ID below :data:`UPLOADS`
(``.casstor-uploads/BUCKET/UPLOAD_ID/NNNNN``: no bucket name starts with a
dot, so no bucket's listing shows them). Completing the upload commits one
new version of the object whose block list is the parts' lists end to end,
but around each seam (where one part ends and the next begins), whose blocks
are cut again as one store of the whole object cuts them
(:mod:`casstor_ops.store.blocks.seams`: ~800 KiB read a seam, ~2 blocks cut). So the
object has the blocks a PUT or ``casstor store`` of its bytes has, whatever its
part size, and an upload of it again with other parts writes no block its list
keeps. The commit is :class:`~casstor_ops.store.engine.upload.Upload`'s of a known
list (``run_listed``): every distinct block checked in ``existing_blocks``
(so verified within the commit bound, as a normal store's), a block the seams
cut and the store lacks written (unclaimed), and all checked again as the
protocol asks; a part's block that vanished cannot be uploaded again (the
parts' bytes are gone), so the completion fails and commits nothing.

A part is a file kept in blocks, never inline (``Store.put(inline=False)``):
an inline part has no block to name. An upload left unfinished is forgotten
after ``SAFETY.abandoned_upload_s`` (a week:
:mod:`casstor_ops.store.coordination.safety`): ``casstor forget`` (and so
``casstor reclaim``) drops every version under :data:`UPLOADS` older than
that, even the newest, and reclaim then frees the blocks no other list names.

Example::

    >>> info = commit_parts(session, settings, parts, "photos/big.iso", fence=lease.fence)   # doctest: +SKIP

Failures: a part whose block list is incomplete, or a block that vanished,
raises :class:`~casstor_ops.errors.CasstorError`, and a block read at a seam
that does not match its hash :class:`~casstor_ops.errors.CorruptionError`
(nothing committed either way); the commit's own failures as
:mod:`casstor_ops.store.engine.commit` says.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from cassandra.cluster import Session

from casstor_ops.errors import CasstorError
from casstor_ops.store.blocks.block_list import ListRow, read_all
from casstor_ops.store.blocks.seams import BlockReader, Recut, seams_of
from casstor_ops.store.coordination.heartbeat import Fence, no_fence
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.restore import blocks_read, checked_blocks, found_blocks
from casstor_ops.store.engine.upload import Upload
from casstor_ops.store.records import FileInfo, ObjectMeta
from casstor_ops.store.schema import StoreSettings

UPLOADS = ".casstor-uploads/"
# The seams' runs take ~780 KiB a seam, ~900 KiB with the blocks read ahead (4.7 blocks of 192 KiB on average at
# the default sizes): four blocks a request (~770 KiB, 4 MiB at most); a group of seams' reads
# (seams.SEAMS_AT_ONCE) is 16 requests, sent at once.
READ_GROUP = 4
# How long a Complete cuts seams again, at most (seams.Recut). A seam cost 11-14 ms here (Completes of 200 parts of 5
# MiB, on a node that had just been written their 1 GB), so ~1,500 seams fit; a Complete of 10,000 parts took ~17 s
# before this (docs/benchmarks.md), and botocore waits 60 s for its answer.
SEAMS_BUDGET_S = 20.0


def abandoned(file_id: str, newest_micros: int, now_micros: int) -> bool:
    """Whether ``file_id`` is a part (or record) of an upload untouched for ``SAFETY.abandoned_upload_s``."""
    return file_id.startswith(UPLOADS) and newest_micros < now_micros - SAFETY.abandoned_upload_s * 1_000_000


def block_list(part: FileInfo, rows: list[ListRow]) -> tuple[list[bytes], list[int]]:
    """A part's block hashes and sizes, in order, from its list ``rows``; CasstorError if they do not add up to it."""
    if len(rows) != part.blocks or sum(size for _, _, size in rows) != part.size:
        raise CasstorError(f"part {part.id!r} has no complete block list (an inline part, or one being forgotten): "
                           f"upload it again")
    return [digest for _, digest, _ in rows], [size for _, _, size in rows]


def _vanished(missing: list[bytes]) -> None:
    raise CasstorError(f"block {missing[0].hex()} of a part is no longer stored (reclaimed?): upload the parts again")


def _block_reader(session: Session, st: Statements, file_id: str, hashes: list[bytes],
                  sizes: list[int]) -> BlockReader:
    """Reads of the concatenation's blocks for its seams' runs, :data:`READ_GROUP` a request, all sent at once; each
    block decoded and checked against its hash (CorruptionError naming its offset) when it is taken."""
    offsets: dict[bytes, tuple[int, int]] = {}
    for offset, digest, size in zip(itertools.accumulate(sizes, initial=0), hashes, sizes):
        offsets.setdefault(digest, (offset, size))

    def read(wanted: list[bytes]) -> Callable[[], dict[bytes, bytes]]:
        groups = [wanted[i:i + READ_GROUP] for i in range(0, len(wanted), READ_GROUP)]
        sent = [session.execute_async(*blocks_read(st, group), execution_profile=st.plain_rows) for group in groups]

        def answered() -> dict[bytes, bytes]:
            found: dict[bytes, bytes] = {}
            for group, future in zip(groups, sent):
                stored = found_blocks(future.result())
                if missing := [digest for digest in group if digest not in stored]:
                    _vanished(missing)
                blocks = [stored[d].listed(d, *offsets[d]) for d in group]
                found.update(zip(group, checked_blocks(file_id, blocks)))
            return found

        return answered

    return read


def commit_parts(session: Session, settings: StoreSettings, parts: list[FileInfo], file_id: str,
                 fence: Fence = no_fence, object_meta: Callable[[], ObjectMeta] | None = None,
                 seams_budget_s: float = SEAMS_BUDGET_S) -> FileInfo:
    """Commit under ``file_id`` a version whose content is ``parts`` end to end (their block lists concatenated,
    cut again around each seam for ``seams_budget_s`` at most: 0 keeps the parts' cuts); its head."""
    st = Statements.for_session(session)
    hashes: list[bytes] = []
    sizes: list[int] = []
    for part, rows in zip(parts, read_all(session, st, parts)):
        part_hashes, part_sizes = block_list(part, rows)
        hashes += part_hashes
        sizes += part_sizes
    cut = Recut(hashes, sizes, seams_of(part.size for part in parts), settings,
                _block_reader(session, st, file_id, hashes, sizes), seams_budget_s)

    def content(digest: bytes) -> bytes:
        data = cut.content(digest)
        if data is None:
            _vanished([digest])
        return data

    return Upload(session, settings, st, fence=fence).run_listed(cut, content, file_id, object_meta)
