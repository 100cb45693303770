"""A version's block list: where it lives and how every reader gets it.

A file of exactly one block (not inline) keeps that block's hash in its
version row's and its directory entry's ``lone_block`` column and has no
``file_blocks`` partition: its list is ``[(0, lone_block, size)]``, read with
the row (a tree restore reads no list for it at all). Any other file, and
every row written before schema 6 (a null column), keeps its list in
``file_blocks``, one partition per (id, version). Almost every small file has
one block, so this saves a tree restore one request per file.

Such a row holds no file hash either (schema 7; ``hash`` is left unset): a
file's hash is the hash of its block hashes (:mod:`casstor_ops.store.blocks.hashing`),
so a one-block file's is ``block_hash(lone_block)``, and :func:`file_hash_of`
gives every reader a row's file hash. A store of 5,626 small files took
0.43 MB less on disk (docs/benchmarks.md): 32 bytes no compression shrinks,
twice a file. A directory entry rewritten from a many-block version to a
one-block one may keep the old ``hash`` cell (unset writes nothing): whenever
``lone_block`` is set, it alone counts.

Example::

    >>> head = FileInfo("a", version, 10, digest, 1, None, lone_block=block)                  # doctest: +SKIP
    >>> carried(head)                                                                          # doctest: +SKIP
    [(0, block, 10)]
    >>> read(session, st, head)          # the carried list, or file_blocks' rows               # doctest: +SKIP
    >>> file_hash_of(row) == file_hash([row.lone_block])      # a row of a one-block file          # doctest: +SKIP
    True

Failure behaviour: none here beyond the driver's errors on a read; a list
that does not add up to its head is for the caller to check
(:func:`casstor_ops.store.engine.restore.checked_list`), as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from cassandra.cluster import Session

from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.cql.row_requests import results
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.records import InlineContent

class ListRow(NamedTuple):
    """One block of a list, as ``file_blocks`` has it: where it starts in the file, its hash, its size."""

    offset: int
    hash: bytes
    size: int


class Version(Protocol):
    """What a block list is found by: a version's key, size and row's ``lone_block`` (a FileInfo has them)."""

    id: str
    version: uuid.UUID
    size: int
    lone_block: bytes | None


def lone_block(hashes: list[bytes], stored: InlineContent | None) -> bytes | None:
    """The ``lone_block`` column of a new version kept in the blocks ``hashes`` (or inline as ``stored``): its
    only block's hash, or None when its list goes to ``file_blocks`` (or it has none)."""
    return hashes[0] if stored is None and len(hashes) == 1 else None


class HashedRow(Protocol):
    """A version row or directory entry as read: its ``hash`` column and its ``lone_block``."""

    hash: bytes | None
    lone_block: bytes | None


def file_hash_of(row: HashedRow) -> bytes:
    """The file hash of a version row or entry as read: its lone block's hash's hash, else its ``hash`` column."""
    return row.hash if row.lone_block is None else block_hash(row.lone_block)


def hash_column(digest: bytes, lone: bytes | None) -> bytes | None:
    """The ``hash`` a version row or entry is written with, for a file of hash ``digest`` and lone block ``lone``:
    None (left unset) when :func:`file_hash_of` derives it."""
    return digest if lone is None else None


def carried(head: Version) -> list[ListRow] | None:
    """The list ``head``'s row carries (its lone block), or None when it is in ``file_blocks``."""
    return None if head.lone_block is None else [ListRow(0, head.lone_block, head.size)]


def read(session: Session, st: Statements, head: Version) -> list[ListRow]:
    """``head``'s whole block list: the carried one, else ``file_blocks``' rows (one request)."""
    rows = carried(head)
    if rows is None:
        rows = [ListRow(*r) for r in session.execute(st.file_blocks, (head.id, head.version),
                                                  execution_profile=st.plain_rows)]
    return rows


def read_all(session: Session, st: Statements, heads: Sequence[Version]) -> list[list[ListRow]]:
    """Each of ``heads``' whole block lists, in order, as :func:`read` gives one: those in ``file_blocks`` read
    many at once (:mod:`~casstor_ops.store.cql.row_requests`; a multipart upload's parts: one by one, 10,000 took
    ~20 s)."""
    lists = [carried(head) for head in heads]
    unread = [(i, head) for i, head in enumerate(heads) if lists[i] is None]
    answers = results(session, [Query(st.file_blocks, (head.id, head.version)) for _, head in unread],
                      st.plain_rows)
    for (i, _), rows in zip(unread, answers):
        lists[i] = [ListRow(*r) for r in rows]
    return lists
