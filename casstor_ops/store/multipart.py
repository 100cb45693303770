"""Multipart objects: parts kept as hidden files, and the commit of their block lists concatenated.

An S3 multipart upload's parts are stored like any file (chunked,
deduplicated), each under a hidden ID below :data:`UPLOADS`
(``.casstor-uploads/BUCKET/UPLOAD_ID/NNNNN``: no bucket name starts with a
dot, so no bucket's listing shows them). Completing the upload commits one
new version of the object whose block list is the parts' lists end to end:
no byte is read or written again, only the lists are read and one is
written. The commit is :class:`~casstor_ops.store.commit.Commit`'s, with
every distinct block checked in ``existing_blocks`` first (so verified within
the commit bound, as a normal store's), and checked again as the protocol
asks; a block that vanished cannot be uploaded again (the parts' bytes are
gone), so the completion fails and commits nothing.

A part is a file kept in blocks, never inline (``Store.put(inline=False)``):
an inline part has no block to name. An upload left unfinished is forgotten
after :data:`ABANDONED_AFTER_S`: ``casstor forget`` (and so ``casstor
reclaim``) drops every version under :data:`UPLOADS` older than that, even
the newest, and reclaim then frees the blocks no other list names.

Example::

    >>> info = commit_parts(session, settings, parts, "photos/big.iso", fence=lease.fence)   # doctest: +SKIP

Failures: a part whose block list is incomplete, or a block that vanished,
raises :class:`~casstor_ops.errors.CasstorError` (nothing committed); the
commit's own failures as :mod:`casstor_ops.store.commit` says.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from cassandra.cluster import Session

from casstor_ops.errors import CasstorError
from casstor_ops.store.block_list import ListRow, read_all
from casstor_ops.store.commit import Commit, VerifiedBlocks
from casstor_ops.store.coordination.heartbeat import Fence, no_fence
from casstor_ops.store.existence import ExistenceChecks
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.records import FileInfo, ObjectMeta
from casstor_ops.store.request_queue import RequestQueue
from casstor_ops.store.schema import StoreSettings
from casstor_ops.store.statements import Statements

UPLOADS = ".casstor-uploads/"
ABANDONED_AFTER_S = 7 * 24 * 3600  # an upload with no part newer than this is forgotten
CHECK_REQUESTS = 16


def abandoned(file_id: str, newest_micros: int, now_micros: int) -> bool:
    """Whether ``file_id`` is a part (or record) of an upload untouched for :data:`ABANDONED_AFTER_S`."""
    return file_id.startswith(UPLOADS) and newest_micros < now_micros - ABANDONED_AFTER_S * 1_000_000


def block_list(part: FileInfo, rows: list[ListRow]) -> tuple[list[bytes], list[int]]:
    """A part's block hashes and sizes, in order, from its list ``rows``; CasstorError if they do not add up to it."""
    if len(rows) != part.blocks or sum(size for _, _, size in rows) != part.size:
        raise CasstorError(f"part {part.id!r} has no complete block list (an inline part, or one being forgotten): "
                           f"upload it again")
    return [digest for _, digest, _ in rows], [size for _, _, size in rows]


class _Checked:
    """The distinct blocks of a concatenation, each verified by an existence check (none re-uploaded)."""

    def __init__(self, session: Session, st: Statements) -> None:
        self._requests = RequestQueue(session, CHECK_REQUESTS, execution_profile=st.plain_rows)
        self.verified: dict[bytes, float] = {}
        self._checks = ExistenceChecks(self._requests, st, on_found=self.verified.__setitem__)

    def check(self, hashes: list[bytes], _read: Callable[[bytes], bytes] | None = None) -> None:
        self._checks.check(hashes, on_missing=_vanished)
        self._requests.drain()


def _vanished(missing: list[bytes]) -> None:
    raise CasstorError(f"block {missing[0].hex()} of a part is no longer stored (reclaimed?): upload the parts again")


def commit_parts(session: Session, settings: StoreSettings, parts: list[FileInfo], file_id: str,
                 fence: Fence = no_fence, object_meta: Callable[[], ObjectMeta] | None = None) -> FileInfo:
    """Commit under ``file_id`` a version whose content is ``parts`` end to end (their block lists concatenated);
    its head."""
    st = Statements.for_session(session)
    hashes: list[bytes] = []
    sizes: list[int] = []
    for part, rows in zip(parts, read_all(session, st, parts)):
        part_hashes, part_sizes = block_list(part, rows)
        hashes += part_hashes
        sizes += part_sizes
    checked = _Checked(session, st)
    checked.check(list(dict.fromkeys(hashes)))
    blocks = VerifiedBlocks(hashes, sizes, checked.verified, checked.check)
    commit = Commit(session, RequestQueue(session, CHECK_REQUESTS, execution_profile=st.plain_rows), st, blocks,
                    namespace=Namespace.for_session(session, settings.directory_rows), fence=fence,
                    inline_store=settings.inline_max > 0, object_meta=object_meta)
    return commit.run(io.BytesIO(), file_id, sum(sizes))
