"""Buckets: top-level directories of the store, recorded in the ``buckets`` table.

Why a table and not the directory's marker alone: a bucket has a creation
time (ListBuckets shows it) and a versioning state, which a marker
has no column for; and a bucket must stay a bucket while it is empty, while a
directory of the index exists as soon as anything was stored under it (a
``casstor store b/x`` makes ``b/`` a directory, not a bucket). CreateBucket
writes the row (``IF NOT EXISTS``: a second create is BucketAlreadyOwnedByYou)
and makes the directory ``b/`` (its marker in the root), so ``casstor ls b/``
lists the bucket's objects; DeleteBucket removes the row only, and only while
no object is under ``b/`` (the empty directory stays, as after ``casstor rm``).

Example::

    >>> Buckets(store).create("photos")                       # doctest: +SKIP
    >>> [b.name for b in Buckets(store).all()]                # doctest: +SKIP
    ['photos']

Failures (:class:`~.errors.S3Error`): an invalid name: InvalidBucketName;
unknown: NoSuchBucket; a second create: BucketAlreadyOwnedByYou; a delete
while objects remain: BucketNotEmpty. The driver's errors propagate.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from datetime import datetime, timezone

from casstor_ops.serve.s3.errors import S3Error, no_such_bucket
from casstor_ops.store.api import Store
from casstor_ops.store.history.policy import Policy
from casstor_ops.store.namespace.listing import entries_under
from casstor_ops.store.statements import Statements

KEEP_EVERY = 2 ** 31 - 1  # keep_last of a versioned bucket: every version (the column is a CQL int)
_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def check_name(name: str) -> str:
    """``name`` if S3 accepts it for a new bucket: 3-63 of ``a-z0-9.-``, starting and ending with a letter or
    digit, no ``..``, not an IP address, not ``xn--``/``sthree-`` prefixed or ``-s3alias``/``--ol-s3`` suffixed."""
    if (not _NAME.fullmatch(name) or ".." in name or ".-" in name or "-." in name or _is_ip(name)
            or name.startswith(("xn--", "sthree-")) or name.endswith(("-s3alias", "--ol-s3"))):
        raise S3Error("InvalidBucketName", "The specified bucket is not valid.", f"/{name}", BucketName=name)
    return name


def _is_ip(name: str) -> bool:
    try:
        ipaddress.IPv4Address(name)
        return True
    except ValueError:
        return False


class Buckets:
    """The buckets of one store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._session = store.session
        self._st = Statements.for_session(store.session)

    def create(self, name: str) -> None:
        check_name(name)
        applied = self._session.execute(self._st.create_bucket, (name, datetime.now(timezone.utc))).one()[0]
        if not applied:
            raise S3Error("BucketAlreadyOwnedByYou", "Your previous request to create the named bucket "
                                                     "succeeded and you already own it.", f"/{name}", BucketName=name)
        self._store.namespace.generation(name + "/")  # makes the directory and its marker in the root

    def created(self, name: str) -> datetime:
        """When bucket ``name`` was created; NoSuchBucket if it does not exist."""
        row = self._session.execute(self._st.read_bucket, (name,)).one()
        if row is None:
            raise no_such_bucket(name)
        return row.created_at

    def versioning(self, name: str) -> str | None:
        """The bucket's versioning state (``Enabled``, ``Suspended``, or None: never set); NoSuchBucket."""
        row = self._session.execute(self._st.read_bucket, (name,)).one()
        if row is None:
            raise no_such_bucket(name)
        return row.versioning

    def set_versioning(self, name: str, status: str) -> None:
        """Record ``status``; Enabled also keeps every version of the bucket's objects from forget (a retention
        policy of ``keep_last`` :data:`KEEP_EVERY`); Suspended leaves that policy (the versions stay, as in S3)."""
        self.created(name)
        if status == "Enabled":
            self._store.set_retention(name + "/", Policy(keep_last=KEEP_EVERY))
        self._session.execute(self._st.set_bucket_versioning, (status, name))

    def all(self) -> list:
        """Every bucket (rows with ``name`` and ``created_at``), by name: a read of the small ``buckets`` table."""
        return sorted(self._session.execute(self._st.all_buckets), key=lambda row: row.name)

    def delete(self, name: str) -> None:
        self.created(name)
        if next(self.objects(name), None) is not None:
            raise S3Error("BucketNotEmpty", "The bucket you tried to delete is not empty.", f"/{name}",
                          BucketName=name)
        self._session.execute(self._st.delete_bucket, (name,))

    def objects(self, name: str, prefix: str = "") -> Iterator:
        """The entries of the bucket's objects whose key starts with ``prefix``, in key order."""
        return entries_under(self._session, self._st, f"{name}/{prefix}")
