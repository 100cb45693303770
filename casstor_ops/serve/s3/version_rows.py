"""An S3 key's version rows as S3 sees them (versionIds, the ``null`` version), and dropping versions.

casstor keeps every write of a key as a version row with its own timeuuid.
S3 gives a version written while its bucket's versioning is not Enabled the
versionId ``null``, and a later such write replaces it. So that row is
flagged (``versions.null_version``, written with it: :func:`is_null_write`)
and its versionId is ``null``; one without the flag (written while Enabled,
or by ``casstor store``) has its timeuuid as its versionId (:func:`name`).
Of several null rows S3 shows the newest (:func:`visible`); the older ones are
dropped by the write that replaced them in a Suspended bucket
(:func:`replaced`: as S3 deletes them, and the keep-every policy an Enabled
bucket set would keep them for ever), and stay casstor's history in a bucket
never versioned (forget's policy decides; ``casstor ls --versions`` and
``casstor restore`` see them). A bucket never versioned shows no delete
marker either: there S3's DELETE removes the object.

Dropping versions (DeleteObject ``versionId``, :func:`drop`): rows oldest
first, each row then its block list, as forget drops them
(:func:`~casstor_ops.store.history.forget.drop_all`; reclaim then frees
only the blocks no remaining row names). Dropping the newest makes the next
one the head: the directory entry is rewritten to summarise it, or removed
when none is left (:meth:`~casstor_ops.store.namespace.entries.Namespace.supersede`,
stamped after the entry it replaces, so a version stored later still wins),
and the head is read again and the entry rewritten again if a store landed
meanwhile.

Example::

    >>> [name(row) for row in visible(rows, "Suspended")]      # doctest: +SKIP
    ['null', '9c5f7e1e-...']

Failures: a malformed versionId: NoSuchVersion (:class:`~.errors.S3Error`);
the driver's errors propagate.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from casstor_ops.errors import NotFoundError
from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.store.api import Store
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.history.forget import VersionsToDrop, drop_all

NULL = "null"
ENABLED, SUSPENDED = "Enabled", "Suspended"
SUPERSEDE_ATTEMPTS = 5  # entry rewrites while stores keep landing; each is one read and two writes


def name(row) -> str:
    """A version row's S3 versionId."""
    return NULL if row.null_version else str(row.version)


def is_null_write(versioning: str | None) -> bool:
    """Whether a write into a bucket of this versioning state makes the ``null`` version."""
    return versioning != ENABLED


def version_id(text: str) -> uuid.UUID:
    """A ``versionId`` other than ``null`` as this server gives them (a time-based UUID); NoSuchVersion otherwise."""
    try:
        version = uuid.UUID(text)
    except ValueError:
        version = None
    if version is None or version.version != 1:
        raise S3Error("NoSuchVersion", "The specified version does not exist.", VersionId=text)
    return version


def visible(rows: Sequence, versioning: str | None) -> list:
    """Of a key's rows (newest first), those S3 shows: every one with its own versionId, the newest null one,
    and no delete marker in a bucket never versioned."""
    found, null_seen = [], False
    for row in rows:
        if row.null_version:
            if null_seen:
                continue
            null_seen = True
        if not (row.deleted and versioning is None):
            found.append(row)
    return found


def matching(rows: Sequence, text: str) -> list:
    """The rows (newest first) the versionId ``text`` names: every null row for ``null`` (S3 has one)."""
    if text == NULL:
        return [row for row in rows if row.null_version]
    version = version_id(text)
    return [row for row in rows if row.version == version]


def replaced(rows: Sequence) -> list:
    """The null rows (newest first) a newer null row replaced."""
    return [row for row in rows if row.null_version][1:]


def drop(store: Store, file_id: str, rows: Sequence, dropping: Sequence) -> None:
    """Drop ``dropping`` of ``file_id``'s rows (``rows``: all of them, newest first, as read under the key's
    lock); if the head is among them, rewrite the entry for the new head (module docstring)."""
    session = store.session
    st = Statements.for_session(session)
    drop_all(session, st, store.namespace, [VersionsToDrop(file_id, list(reversed(dropping)))])
    if not rows or rows[0].version not in {row.version for row in dropping}:
        return
    dropped = rows[0].version
    for _ in range(SUPERSEDE_ATTEMPTS):
        head = _head(store, file_id)
        if head is None:
            store.namespace.supersede(file_id, dropped, None)
        else:
            store.namespace.supersede(file_id, dropped, head.file, head.deleted, head.stored_size)
        again = _head(store, file_id)
        if (again and again.file.version) == (head and head.file.version):
            return


def _head(store: Store, file_id: str):
    """The ID's newest version (a :class:`~casstor_ops.store.records.VersionInfo`), or None."""
    try:
        return store.versions(file_id)[0]
    except NotFoundError:
        return None
