"""Buckets: top-level directories of the store, recorded in the ``buckets`` table.

Why a table and not the directory's marker alone: a bucket has a creation
time (ListBuckets shows it) and a versioning state, which a marker
has no column for; and a bucket must stay a bucket while it is empty, while a
directory of the index exists as soon as anything was stored under it (a
``casstor store b/x`` makes ``b/`` a directory, not a bucket). CreateBucket
writes the row with its owner, the access key that signed the request (``IF NOT EXISTS``: a second create
by its owner succeeds, by another user is BucketAlreadyExists)
and makes the directory ``b/`` (its marker in the root), so ``casstor ls b/``
lists the bucket's objects; DeleteBucket removes the row only, and only while
no object is under ``b/`` (the empty directory stays, as after ``casstor rm``).

Example::

    >>> Buckets(store).create("photos", owner="AKIAME")       # doctest: +SKIP
    >>> [b.name for b in Buckets(store).all("AKIAME")]        # doctest: +SKIP
    ['photos']

A request reads its bucket's row once (:meth:`Buckets.authorize` answers it as a :class:`Bucket`) and its
operations take what they need from that record: the versioning state of a PUT, copy or DELETE, the CORS
rules of an answer to another origin. A GetObject or HeadObject of an object's newest version (no
``versionId``, no ``Origin``) may take the row from this worker's memory (:meth:`Buckets.authorize_read`, at
most :data:`READ_ROW_SECONDS` old): a bucket's owner never changes and a bucket is deleted only when empty, so
an object committed before the row was read is in the bucket that row describes; a newer object, and any
refusal, is checked again on a fresh row (:class:`ReadGrant`). Every write reads the row fresh: from a read
sent after the request came, which the requests for that bucket that came meanwhile share
(:class:`~casstor_ops.serve.fresh_reads.FreshReads`).

Failures (:class:`~.errors.S3Error`): an invalid name: InvalidBucketName;
unknown: NoSuchBucket; another user's: AccessDenied (:meth:`Buckets.authorize`: every request but
ListBuckets and CreateBucket is checked); a second create by another user: BucketAlreadyExists; a delete
while objects remain: BucketNotEmpty. The driver's errors propagate.
"""

from __future__ import annotations

import calendar
import ipaddress
import re
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from functools import partial
from datetime import datetime, timezone

from casstor_ops.serve.bridge import answered, one_row
from casstor_ops.serve.fresh_reads import FreshReads
from casstor_ops.serve.s3.errors import S3Error, access_denied, invalid_argument, no_such_bucket
from casstor_ops.serve.s3.xml import parse
from casstor_ops.store.api import Store
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.history.policy import Policy
from casstor_ops.store.namespace.listing import entries_under

KEEP_EVERY = 2 ** 31 - 1  # keep_last of a versioned bucket: every version (the column is a CQL int)
MAX_BUCKETS = 10_000  # S3's largest max-buckets
MAX_CONFIG_BODY = 64 * 1024
READ_ROW_SECONDS = 10.0  # how long a GET or HEAD may take its bucket's row from this worker's memory
# Gateways' clocks may differ (committed_at is the writer's): an object this much older than the remembered
# row is still checked on a fresh one. Cassandra's last-write-wins needs the clocks far closer than this.
CLOCK_MARGIN_SECONDS = 2.0
_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def owner_of(access_key: str) -> dict[str, str]:
    """An S3 Owner (or Grantee, Initiator) element: the access key is the user's ID and display name."""
    return {"ID": access_key, "DisplayName": access_key}


def location_of(body: bytes) -> str | None:
    """The LocationConstraint of a CreateBucket body (None: no body, or none named); MalformedXML."""
    if not body:
        return None
    try:
        if len(body) > MAX_CONFIG_BODY:
            raise ValueError("too large")
        return (parse(body).findtext("LocationConstraint") or "").strip() or None
    except (ValueError, SyntaxError):
        raise S3Error("MalformedXML", "The XML you provided was not well-formed or did not validate.") from None


def max_buckets(value: str | None) -> int:
    """ListBuckets' ``max-buckets``: 1 to 10000 (the default: all, as without paging); InvalidArgument."""
    try:
        wanted = MAX_BUCKETS if value is None else int(value)
    except ValueError:
        wanted = 0
    if not 1 <= wanted <= MAX_BUCKETS:
        raise invalid_argument(f"max-buckets must be a number from 1 to {MAX_BUCKETS}")
    return wanted


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


@dataclass(frozen=True)
class Bucket:
    """A bucket's row as one request read it."""

    name: str
    created_at: datetime
    versioning: str | None  # Enabled, Suspended, or None: never set
    owner: str | None  # the access key that created it (None: made before owners were recorded)
    location: str | None
    cors: str | None  # the CORS rules as JSON (:mod:`.cors`), None: none


@dataclass(frozen=True)
class ReadGrant:
    """A GET's or HEAD's owner check made on a remembered bucket row (:meth:`Buckets.authorize_read`): it holds
    for an object committed before that row was read (every object of a bucket deleted and made again since is
    newer: a bucket is deleted only when empty)."""

    access_key: str
    read_at: float  # time.time() when the row's read began

    def covers(self, committed_at: datetime) -> bool:
        """Whether an object committed at ``committed_at`` (the driver's UTC datetime) is older than the row."""
        return calendar.timegm(committed_at.utctimetuple()) < self.read_at - CLOCK_MARGIN_SECONDS


def _record(name: str, row) -> Bucket:
    if row is None:
        raise no_such_bucket(name)
    return Bucket(row.name, row.created_at, row.versioning, row.owner, row.location, row.cors)


def _owned(bucket: Bucket, access_key: str) -> Bucket:
    """``bucket`` if ``access_key`` owns it (one made before owners were recorded has none: every user's)."""
    if bucket.owner not in (None, access_key):
        raise access_denied()
    return bucket


class Buckets:
    """The buckets of one store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._session = store.session
        self._st = Statements.for_session(store.session)
        self._read_rows: dict[str, tuple[float, Bucket]] = {}  # name: (when its read began, row); existing ones
        self._fresh_rows = FreshReads(self._read_row)  # the rows requests read at once, each read sent after they came

    def create(self, name: str, owner: str, location: str | None = None) -> None:
        """Create bucket ``name`` owned by the access key ``owner``. A second create by its owner changes nothing
        and succeeds (S3 in us-east-1, RGW); by another user it is BucketAlreadyExists."""
        check_name(name)
        row = self._session.execute(self._st.create_bucket, (name, datetime.now(timezone.utc), owner, location)).one()
        if not row[0] and row.owner not in (None, owner):  # not applied: the row is the bucket's as it is
            raise S3Error("BucketAlreadyExists", "The requested bucket name is not available. The bucket namespace "
                                                 "is shared by all users of the system.", f"/{name}", BucketName=name)
        self._store.namespace.generation(name + "/")  # makes the directory and its marker in the root

    def row(self, name: str) -> Bucket:
        """Bucket ``name``'s row; NoSuchBucket."""
        return _record(name, self._session.execute(self._st.read_bucket, (name,)).one())

    async def authorize(self, name: str, access_key: str) -> Bucket:
        """Bucket ``name``'s row, read after this call began (a read shared with this worker's concurrent requests
        for it), on the driver's callbacks (no worker thread: a third less server CPU a GET); NoSuchBucket, or
        AccessDenied unless ``access_key`` owns the bucket (one made before owners were recorded has none: every
        user's, as before)."""
        return _owned(_record(name, await self._fresh_rows.get(name)), access_key)

    def _read_row(self, name: str) -> Awaitable:
        return answered(partial(one_row, self._session, self._st.read_bucket, (name,), self._st.named_rows))

    async def authorize_read(self, name: str, access_key: str, fresh: bool = False) -> tuple[Bucket, ReadGrant]:
        """:meth:`authorize` for a GET or HEAD of an object's newest version: the row this worker read at most
        :data:`READ_ROW_SECONDS` ago (``fresh``: read now), and the grant the read must check the object
        against (see the module docstring)."""
        remembered = self._read_rows.get(name)
        if fresh or remembered is None or time.time() - remembered[0] > READ_ROW_SECONDS:
            started = time.time()
            remembered = self._read_rows[name] = (started, await self.authorize(name, access_key))
        return _owned(remembered[1], access_key), ReadGrant(access_key, remembered[0])

    def created(self, name: str) -> datetime:
        """When bucket ``name`` was created; NoSuchBucket if it does not exist."""
        return self.row(name).created_at

    def versioning(self, name: str) -> str | None:
        """The bucket's versioning state (``Enabled``, ``Suspended``, or None: never set); NoSuchBucket."""
        return self.row(name).versioning

    def set_versioning(self, name: str, status: str) -> None:
        """Record ``status``; Enabled also keeps every version of the bucket's objects from forget (a retention
        policy of ``keep_last`` :data:`KEEP_EVERY`); Suspended leaves that policy (the versions stay, as in S3)."""
        self.created(name)
        if status == "Enabled":
            self._store.set_retention(name + "/", Policy(keep_last=KEEP_EVERY))
        self._session.execute(self._st.set_bucket_versioning, (status, name))

    def all(self, owner: str, after: str = "") -> list:
        """The buckets ``owner`` owns (rows with ``name`` and ``created_at``) named after ``after``, by name: a read
        of the small ``buckets`` table."""
        return sorted((row for row in self._session.execute(self._st.all_buckets)
                       if row.owner in (None, owner) and row.name > after), key=lambda row: row.name)

    def delete(self, name: str) -> None:
        self.created(name)
        if next(self.objects(name), None) is not None:
            raise S3Error("BucketNotEmpty", "The bucket you tried to delete is not empty.", f"/{name}",
                          BucketName=name)
        self._session.execute(self._st.delete_bucket, (name,))

    def objects(self, name: str, prefix: str = "") -> Iterator:
        """The entries of the bucket's objects whose key starts with ``prefix``, in key order."""
        return entries_under(self._session, self._st, f"{name}/{prefix}")
