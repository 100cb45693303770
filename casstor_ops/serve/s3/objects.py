"""S3 objects: PutObject, GetObject, HeadObject, DeleteObject, DeleteObjects and CopyObject on the store's files.

Bucket ``b``'s key ``k`` is the file ID ``b/k``. A PUT streams its body to
the store on a write thread (decoding an aws-chunked body on the way,
:mod:`.chunked`), digesting it as the store reads it (:mod:`.checksums`): the
MD5 is the ETag; Content-MD5, ``x-amz-content-sha256`` and
``x-amz-checksum-*`` are checked in the store's ``before_commit`` hook, so a
body that does not match them commits nothing. The ETag, ``Content-Type``,
``x-amz-meta-*``, :data:`KEPT_HEADERS` (Cache-Control, Expires, ...),
``x-amz-tagging`` and the checksum the request named are kept in the version
row (``versions.etag``, ``content_type``, ``user_meta``, ``http_headers``,
``tags``, ``checksum``: answered with ``x-amz-checksum-mode: ENABLED``); a
GET's ``response-*`` query replaces the kept headers in its answer. A GET of
``partNumber`` N answers that part of a multipart object (its
``versions.parts``). A GET answers from one head read and
serves the content as the plain server does (:meth:`Reads.content
<casstor_ops.serve.reads.Reads.content>`), honouring Range, If-Match,
If-None-Match, If-Modified-Since and If-Unmodified-Since (S3's order). A file
stored by ``casstor store`` (no MD5 kept) has its 64-hex file hash as ETag,
which no client takes for an MD5.

CopyObject commits the source version's block list again under the new key
(:meth:`Objects.commit_blocks`, as CompleteMultipartUpload does): no block is
read or written, only a block list and a version row, with the source's file
hash, ETag (a single-part object's MD5, a multipart one's ``MD5-N`` and its
parts), checksum, and the metadata the directives say. Its blocks are checked
and kept from reclaim as a store's found blocks are; one reclaimed meanwhile
(the source forgotten) fails the copy, nothing committed. An inline source
(its bytes in its head row) is read and stored again.
PUTs and DELETEs of a key are ordered by the server's key locks, as the plain
server's (:mod:`..head_locks`); a conditional one is checked and written under
the key's turn across gateways too (:mod:`.conditions`).

Example::

    >>> objects = Objects(store, handlers.reads, handlers.writes, Buckets(store), policy)   # doctest: +SKIP
    >>> await objects.put(request, "photos", "2024/a.jpg", signed)                          # doctest: +SKIP

Failures: :class:`~.errors.S3Error` (NoSuchBucket, NoSuchKey, PreconditionFailed,
InvalidRange, BadDigest, EntityTooLarge, ...); the store's errors propagate
for the dispatcher (:mod:`.app`) to map.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime
from dataclasses import dataclass, replace
from functools import partial
from urllib.parse import parse_qsl, unquote

from starlette.requests import Request
from starlette.responses import Response

from casstor_ops.errors import NotFoundError
from casstor_ops.serve.bridge import answered, on_pool, one_row
from casstor_ops.serve.policy import Policy
from casstor_ops.serve.ranges import ByteRange, Unsatisfiable, parse_range
from casstor_ops.serve.reads import Reads
from casstor_ops.serve.s3.buckets import Buckets, ReadGrant
from casstor_ops.serve.s3.checksums import Checksum, Digests, requested_algorithm, stored_checksum
from casstor_ops.serve.s3.chunked import AwsChunked
from casstor_ops.serve.s3.conditions import ConditionTurns, Turn
from casstor_ops.serve.s3.errors import S3Error, invalid_argument, no_such_key, precondition_failed
from casstor_ops.serve.s3.sigv4 import STREAMING, Signed
from casstor_ops.serve.s3.tags import tags_of_header
from casstor_ops.serve.s3.version_rows import (ENABLED, NULL, SUSPENDED, drop, is_null_write, matching, name,
                                               replaced, version_id)
from casstor_ops.serve.s3.xml import document, parse
from casstor_ops.serve.streams import SMALL_BODY_BYTES, BodyReader
from casstor_ops.serve.validators import WritePrecondition
from casstor_ops.serve.writes import WRITE_THREADS, Writes
from casstor_ops.store.api import FileInfo, SmallFile, Store
from casstor_ops.store.blocks.block_list import file_hash_of
from casstor_ops.store.coordination.heartbeat import checked_then_fenced
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.cql.row_requests import results
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.engine.catalog import head_of
from casstor_ops.store.engine.multipart import commit_parts
from casstor_ops.store.ids import check_id
from casstor_ops.store.records import ObjectMeta, utc_iso

MAX_PUT_BYTES = 5 * 1024 ** 3  # S3's limit of one PutObject
MAX_PARTS = 10_000
MAX_DELETE_BODY = 2 << 20
# Keys of one DeleteObjects deleted at once, each on a write thread: one at a time, 1,000 keys took 3.9-4.8 s (a
# marker is a read and two writes in turn), four at a time 1.7-2.0 s. No more than the threads: another request's
# write then queues behind these few, not behind the whole request.
DELETES_AT_ONCE = WRITE_THREADS
META_PREFIX = "x-amz-meta-"
DEFAULT_CONTENT_TYPE = "binary/octet-stream"
EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e"
# Kept with a version (ObjectMeta.headers) and answered by its GETs and HEADs, as S3 does.
KEPT_HEADERS = ("cache-control", "content-disposition", "content-encoding", "content-language", "expires")
# What a GET's response-* query may replace (presigned links name a download's type and file name this way).
OVERRIDABLE = KEPT_HEADERS + ("content-type",)


def s3_time(when: datetime | None) -> str:
    """A time as S3's XML writes it (``2024-05-01T12:00:00.000Z``); None: now."""
    return utc_iso(when or datetime.now(timezone.utc))


def quoted(etag: str) -> str:
    return f'"{etag}"'


class S3Object:
    """An object's head: the file's version and its S3 attributes."""

    def __init__(self, info: FileInfo, etag: str | None, content_type: str | None,
                 user_meta: Mapping[str, str] | None, http_headers: Mapping[str, str] | None = None,
                 tags: Mapping[str, str] | None = None, checksum: Checksum | None = None,
                 null_version: bool = False) -> None:
        self.info = info
        self.etag = quoted(etag or info.hash.hex())
        self.content_type = content_type or DEFAULT_CONTENT_TYPE
        self.user_meta = dict(user_meta or {})
        self.http_headers = dict(http_headers or {})
        self.tags = dict(tags or {})
        self.checksum = checksum
        self.version_id = NULL if null_version else str(info.version)

    def meta(self, etag: str, checksum: Checksum | None = None, null_version: bool = False) -> ObjectMeta:
        return ObjectMeta(etag, self.content_type, self.user_meta, headers=self.http_headers, tags=self.tags,
                          checksum=stored_checksum(checksum), null_version=null_version)

    def headers(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """The object's response headers; ``overrides`` (a GET's ``response-*`` query) replace the kept ones."""
        modified = (self.info.committed_at or datetime.now(timezone.utc)).replace(tzinfo=timezone.utc)
        return {"etag": self.etag, "last-modified": format_datetime(modified, usegmt=True),
                "content-type": self.content_type, "accept-ranges": "bytes", "x-amz-version-id": self.version_id,
                **{META_PREFIX + name: value for name, value in self.user_meta.items()}, **self.http_headers,
                **({"x-amz-tagging-count": str(len(self.tags))} if self.tags else {}),
                **{name: value for name, value in (overrides or {}).items() if name in OVERRIDABLE}}


def is_marker(key: str, headers: Mapping[str, str]) -> bool:
    """A directory marker: an empty object whose key ends in ``/`` (Hadoop's s3a and consoles make them). It is
    answered and not stored: a directory of the store exists by the files under it (an empty one is not listed,
    as in S3 once its marker is gone)."""
    return key.endswith("/") and (headers.get("x-amz-decoded-content-length") or headers.get("content-length")) == "0"


@dataclass(frozen=True)
class CopySource:
    """What ``x-amz-copy-source`` names: a bucket, a key, and a versionId (None: the newest version)."""

    bucket: str
    key: str
    version: str | None


def copy_source_of(headers: Mapping[str, str]) -> CopySource:
    """The object ``x-amz-copy-source`` names."""
    # The query is cut before the path is decoded: a key may hold an encoded "?" ("?versionId" is one).
    path, _, query = headers["x-amz-copy-source"].partition("?")
    source_bucket, _, source_key = unquote(path).lstrip("/").partition("/")
    return CopySource(source_bucket, source_key, dict(parse_qsl(query)).get("versionId"))


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers a GET answers with again (:data:`KEPT_HEADERS`); Content-Encoding without
    ``aws-chunked``, which names the request's framing, not the object's."""
    kept = {name: headers[name] for name in KEPT_HEADERS if name in headers}
    codings = [c.strip() for c in kept.pop("content-encoding", "").split(",") if c.strip() not in ("", "aws-chunked")]
    return {**kept, "content-encoding": ", ".join(codings)} if codings else kept


def part_number(value: str | None) -> int:
    try:
        number = int(value or "")
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_PARTS:
        raise invalid_argument(f"Part number must be an integer between 1 and {MAX_PARTS}, inclusive")
    return number


def user_meta(headers: Mapping[str, str]) -> dict[str, str]:
    return {name.removeprefix(META_PREFIX): value for name, value in headers.items() if name.startswith(META_PREFIX)}


def _when(header: str | None) -> datetime | None:
    try:
        return parsedate_to_datetime(header) if header else None
    except (TypeError, ValueError):
        return None  # S3 ignores a date it cannot read


def _quoted(tags: str | None) -> str | None:
    """An ``If-Match``/``If-None-Match`` value with every bare tag quoted: S3 takes ``abc`` for ``"abc"`` (s3a and
    the AWS SDKs send them bare)."""
    if tags is None:
        return None
    return ",".join(t if t in ("*", "") or t.startswith(('"', "W/")) else f'"{t}"'
                    for t in (part.strip() for part in tags.split(",")))


def condition_of(if_match: str | None, if_none_match: str | None) -> WritePrecondition | None:
    """The request's precondition (None: neither header), bare tags taken as quoted ones."""
    return WritePrecondition.of(_quoted(if_match), _quoted(if_none_match))


def check_read_conditions(headers: Mapping[str, str], obj: S3Object) -> None:
    """S3's order: If-Match, else If-Unmodified-Since (412); If-None-Match, else If-Modified-Since (304)."""
    modified = (obj.info.committed_at or datetime.now(timezone.utc)).replace(tzinfo=timezone.utc, microsecond=0)
    if_match, if_none_match = headers.get("if-match"), headers.get("if-none-match")
    if if_match is not None:
        if not condition_of(if_match, None).holds(obj.etag):
            raise precondition_failed("If-Match")
    elif (since := _when(headers.get("if-unmodified-since"))) is not None and modified > since:
        raise precondition_failed("If-Unmodified-Since")
    if if_none_match is not None:
        if not condition_of(None, if_none_match).holds(obj.etag):
            raise S3Error("NotModified", "Not Modified")
    elif (since := _when(headers.get("if-modified-since"))) is not None and modified <= since:
        raise S3Error("NotModified", "Not Modified")


class Objects:
    """The object operations of one server (see the module docstring)."""

    def __init__(self, store: Store, reads: Reads, writes: Writes, buckets: Buckets, policy: Policy) -> None:
        self._store = store
        self._st = Statements.for_session(store.session)
        self.reads = reads
        self._writes = writes
        self._buckets = buckets
        self._policy = policy
        self.turns = ConditionTurns(store.session, self._st)

    async def require_bucket(self, bucket: str, access_key: str | None = None) -> None:
        """NoSuchBucket unless ``bucket`` exists; given ``access_key``, AccessDenied unless that key owns it too."""
        if access_key is None:
            await on_pool(self.reads.pool, self._buckets.created, bucket)
        else:
            await self._buckets.authorize(bucket, access_key)

    async def versioning(self, bucket: str) -> str | None:
        """The bucket's versioning state (None: never set); NoSuchBucket."""
        return await on_pool(self.reads.pool, self._buckets.versioning, bucket)

    async def head(self, bucket: str, key: str, version: str | None = None) -> S3Object:
        """The object's head, or its version ``version`` (a versionId) (one read, on the driver's callbacks; two
        for ``null``); NoSuchKey, NoSuchVersion, MethodNotAllowed (a delete marker's versionId; both with
        ``x-amz-delete-marker``), or NoSuchBucket."""
        file_id = f"{bucket}/{key}"
        if version == NULL:
            row = await on_pool(self.reads.pool, self._null_row, file_id)
        else:
            read = (Query(self._st.object_head, (file_id,)) if version is None
                    else Query(self._st.object_version, (file_id, version_id(version))))
            row = await answered(partial(one_row, self._store.session, *read, self._st.named_rows))
        try:
            info = head_of(file_id, row)
        except NotFoundError:
            versioning = await self.versioning(bucket)
            if row is None and version is not None:
                raise S3Error("NoSuchVersion", "The specified version does not exist.", VersionId=version) from None
            err = (no_such_key(bucket, key) if version is None else
                   S3Error("MethodNotAllowed", "The specified method is not allowed against a delete marker."))
            if row is not None:  # S3 shows no marker in a bucket never versioned: there DELETE removes the object
                err.headers.update({"x-amz-delete-marker": "true", "x-amz-version-id": name(row)}
                                   if versioning is not None else {"x-amz-delete-marker": "false"})
            raise err from None
        return S3Object(info, row.etag, row.content_type, row.user_meta, row.http_headers, row.tags,
                        Checksum.parse(row.checksum), bool(row.null_version))

    def _null_row(self, file_id: str):
        """The row of the object's ``null`` version (None: it has none)."""
        session, st = self._store.session, self._st
        found = matching(self.rows(file_id), NULL)
        if not found:
            return None
        return session.execute(st.object_version, (file_id, found[0].version), execution_profile=st.named_rows).one()

    def rows(self, file_id: str) -> list:
        """Every version row of ``file_id``, newest first (the light columns)."""
        return self.rows_of([file_id])[0]

    def rows_of(self, file_ids: list[str]) -> list[list]:
        """:meth:`rows` of each of ``file_ids``, in order, read many at once
        (:func:`~casstor_ops.store.cql.row_requests.results`)."""
        return [list(rows) for rows in results(self._store.session, [Query(self._st.object_versions, (file_id,))
                                                                     for file_id in file_ids], self._st.named_rows)]

    def parts(self, info: FileInfo) -> list[tuple[int, str | None]] | None:
        """A multipart object's parts (each one's size and checksum), None for an object of one PUT."""
        row = self._store.session.execute(self._st.object_parts, (info.id, info.version),
                                          execution_profile=self._st.named_rows).one()
        return row.parts if row is not None else None

    async def part_span(self, obj: S3Object, number: int, headers: dict[str, str]
                        ) -> tuple[ByteRange | None, Checksum | None]:
        """The bytes of part ``number`` of ``obj`` (None: all of an object of one PUT, its part 1) and its
        checksum; ``x-amz-mp-parts-count`` put in ``headers``. InvalidPart for a part it does not have."""
        parts = await on_pool(self.reads.pool, self.parts, obj.info)
        if number > (len(parts) if parts is not None else 1):
            raise S3Error("InvalidPart", "The requested partnumber is not satisfiable", PartNumber=str(number))
        if parts is None:
            return None, obj.checksum
        headers["x-amz-mp-parts-count"] = str(len(parts))
        start = sum(size for size, _ in parts[:number - 1])
        size, value = parts[number - 1]
        if obj.checksum is None or value is None:
            return ByteRange(start, start + size), None
        return ByteRange(start, start + size), Checksum(obj.checksum.algorithm, value, obj.checksum.type)

    async def get(self, request: Request, bucket: str, key: str, send_body: bool, version: str | None = None,
                  part: str | None = None, grant: ReadGrant | None = None) -> Response:
        """GetObject or HeadObject; ``grant``: authorized on a remembered bucket row, which holds for an object
        older than it, else (a newer object, a refusal) the caller is authorized again on a fresh row."""
        try:
            obj = await self.head(bucket, key, version)
        except S3Error:
            if grant is not None:  # NoSuchBucket or AccessDenied of the fresh row before NoSuchKey
                await self._buckets.authorize_read(bucket, grant.access_key, fresh=True)
            raise
        if grant is not None and not grant.covers(obj.info.committed_at):
            await self._buckets.authorize_read(bucket, grant.access_key, fresh=True)
        overrides = {name.removeprefix("response-"): value for name, value in request.query_params.items()
                     if name.startswith("response-")} if b"response-" in request.scope["query_string"] else {}
        headers = obj.headers(overrides)  # the query parsed only when it names one: most GETs have none
        try:
            check_read_conditions(request.headers, obj)
        except S3Error as err:
            if err.code == "NotModified":
                return Response(status_code=304, headers={k: headers[k] for k in ("etag", "last-modified")})
            raise
        size = obj.info.size
        if part is not None:
            wanted, checksum = await self.part_span(obj, part_number(part), headers)
        else:
            wanted = self._range(request, size)
            checksum = obj.checksum if wanted is None else None  # a range's bytes have none
        if checksum is not None and request.headers.get("x-amz-checksum-mode", "").upper() == "ENABLED":
            headers.update(checksum.headers())
        headers["content-length"] = str(size if wanted is None else wanted.stop - wanted.start)
        if wanted is not None:
            headers["content-range"] = wanted.content_range(size)
        if not send_body:
            return Response(status_code=200 if wanted is None else 206, headers=headers)
        return await self.reads.content(obj.info, wanted, headers, f"{bucket}/{key}")

    @staticmethod
    def _range(request: Request, size: int) -> ByteRange | None:
        try:
            return parse_range(request.headers.get("range"), size)
        except Unsatisfiable:
            raise S3Error("InvalidRange", "The requested range is not satisfiable", ActualObjectSize=str(size),
                          RangeRequested=request.headers.get("range", "")) from None

    def reader(self, request: Request) -> BodyReader:
        """The request's raw body, counted against the limit and the body deadline."""
        # A chunked body (no length checked first) is refused as soon as it passes S3's limit (or --max-body).
        limit = (self._policy.max_body if "content-length" in request.headers
                 else min(MAX_PUT_BYTES, self._policy.max_body or MAX_PUT_BYTES))
        return BodyReader(request.stream(), asyncio.get_running_loop(), limit=limit,
                          deadline_s=self._policy.body_timeout_s)

    def body(self, request: Request, signed: Signed, also: str | None = None,
             reader: BodyReader | None = None) -> Digests:
        """The request's body (from ``reader``, if given) as the store will read it: decoded, counted, digested
        (``also``: by that algorithm too)."""
        headers = request.headers
        reader = reader or self.reader(request)
        if signed.payload in STREAMING:
            chunks = AwsChunked(reader, signed)
            length = headers.get("x-amz-decoded-content-length")
            return Digests(chunks, headers, length=int(length) if length else None, trailer=lambda: chunks.trailer,
                           also=also)
        length = headers.get("content-length")
        sha256 = signed.payload if len(signed.payload) == 64 else None
        return Digests(reader, headers, sha256, int(length) if length else None, also=also)

    def check_size(self, request: Request) -> None:
        length = request.headers.get("x-amz-decoded-content-length") or request.headers.get("content-length")
        if length is None:
            if "chunked" in request.headers.get("transfer-encoding", "") and not self._policy.require_length:
                return  # streamed as the plain server streams a chunked PUT, counted against the limit as it comes
            raise S3Error("MissingContentLength", "You must provide the Content-Length HTTP header.")
        if int(length) > MAX_PUT_BYTES or (self._policy.max_body is not None and int(length) > self._policy.max_body):
            raise S3Error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")

    async def put(self, request: Request, bucket: str, key: str, signed: Signed, versioning: str | None) -> Response:
        """PutObject into ``bucket`` (authorized, of ``versioning``: its row as the request read it)."""
        self.check_size(request)
        if is_marker(key, request.headers):
            await request.body()
            return Response(status_code=200, headers={"etag": quoted(EMPTY_MD5)})
        file_id = check_id(f"{bucket}/{key}", storing=True)
        condition = condition_of(request.headers.get("if-match"), request.headers.get("if-none-match"))
        reader = self.reader(request)
        body = self.body(request, signed, reader=reader)
        headers = request.headers
        meta = S3Object(FileInfo(file_id, None, 0, b"", 0, None), None, headers.get("content-type"),
                        user_meta(headers), kept_headers(headers), tags_of_header(headers.get("x-amz-tagging")))
        async with self._writes.small_bodies:
            # As the plain PUT (writes.py): the first MiB, a small body whole, is read on the event loop, so the
            # write thread does not wait for the client chunk by chunk.
            whole = await reader.read_ahead(SMALL_BODY_BYTES)
            if whole and condition is None and versioning != SUSPENDED and \
                    not self._store.callbacks.keeps_inline(reader.held_bytes):
                version = await self._put_in_group(body, reader.held_bytes, file_id, meta, versioning)
            else:
                version = await self._writes.write(partial(self.store_body, body, file_id, condition, meta,
                                                           versioning=versioning))
        checksum = body.checksum()
        return Response(status_code=200, headers={"etag": quoted(body.etag), **version_headers(versioning, version),
                                                  **(checksum.headers() if checksum is not None else {})})

    async def _put_in_group(self, body: Digests, size: int, file_id: str, meta: S3Object,
                            versioning: str | None) -> uuid.UUID:
        """An unconditional PutObject whose body (``size`` bytes as it came) the server holds whole, stored by the
        plain PUT's group commit (:mod:`casstor_ops.serve.group_commit`) with its attributes. Its body is read,
        digested and checked on the group's thread, before the batch is stored, so a mismatch stores nothing. Not in
        a Suspended bucket: the null versions a PUT replaces there are dropped under the key's lock, by
        :meth:`store_body`. The version committed."""
        def prepared() -> SmallFile:
            data = body.read()  # held in memory: no wait for the client
            body.check()
            return SmallFile(file_id, data, meta=meta.meta(body.etag, body.checksum(), is_null_write(versioning)))

        result = await self._writes.group.put_prepared(file_id, size, prepared)
        return result.version

    def current_etag(self, file_id: str) -> str | None:
        row = self._store.session.execute(self._st.object_head, (file_id,), execution_profile=self._st.named_rows).one()
        if row is None or row.deleted:
            return None
        return quoted(row.etag or file_hash_of(row).hex())

    def store_body(self, body: Digests, file_id: str, condition: WritePrecondition | None, meta: S3Object | None,
                   lease: WriterLease, check_source=lambda: None, inline: bool = True,
                   versioning: str | None = ENABLED, algorithm: str | None = None) -> uuid.UUID:
        """The store call of a PUT, POST or copy (write thread): digests and the precondition checked just before
        the head write, under the key's lock; in a bucket of ``versioning``, a null version replaces the older ones
        (:mod:`.version_rows`). The checksum kept: by ``algorithm`` (one ``body`` computes), else the one the
        request named. The version committed."""
        def check() -> None:
            check_source()
            body.check()
            self.check_condition(file_id, condition, turn)

        null = is_null_write(versioning)
        with self._writes.head_locks.lock_for(file_id) as lock, self.turns.turn(file_id) as turn:
            result = self._store.put(body, file_id, lease=lease, before_commit=lock.then(check),
                                     head_fence=turn.fence, inline=inline,
                                     object_meta=lambda: meta.meta(body.etag, body.checksum(algorithm), null) if meta
                                     else ObjectMeta(body.etag, checksum=stored_checksum(body.checksum(algorithm)),
                                                     null_version=null))
            self.drop_replaced(file_id, versioning)
        return result.version

    def drop_replaced(self, file_id: str, versioning: str | None) -> None:
        """In a Suspended bucket, drop the null versions a new one replaced (under the key's lock)."""
        if versioning == SUSPENDED:
            rows = self.rows(file_id)
            drop(self._store, file_id, rows, replaced(rows))

    async def delete(self, bucket: str, key: str, headers: Mapping[str, str], versioning: str | None) -> Response:
        """DeleteObject in ``bucket`` (authorized, of ``versioning``)."""
        condition = condition_of(headers.get("if-match"), None)
        marker = await self._writes.write(partial(self._remove, f"{bucket}/{key}", condition, versioning))
        return Response(status_code=204, headers=marker_headers(versioning, marker))

    def check_condition(self, file_id: str, condition: WritePrecondition | None, turn: Turn) -> None:
        """PreconditionFailed unless ``condition`` (if any) holds, checked under the key's ``turn`` across gateways
        (:mod:`.conditions`), which it takes: the caller writes the head before the turn is given back. If-Match on
        a key with no current object (none, or a delete marker) is NoSuchKey, as in S3."""
        if condition is None:
            return
        turn.take()
        current = self.current_etag(file_id)
        if condition.if_match is not None and current is None:
            raise no_such_key(*file_id.split("/", 1))
        if not condition.holds(current):
            raise precondition_failed("If-Match" if condition.if_match is not None else "If-None-Match")

    def _remove(self, file_id: str, condition: WritePrecondition | None, versioning: str | None,
                lease: WriterLease) -> uuid.UUID | None:
        """DeleteObject (write thread): a delete marker (a null one unless versioning is Enabled, replacing the null
        version when Suspended), stacked on any head; in a bucket never versioned only over an object (S3 answers
        204 for a key that is not there). The marker's version, or None."""
        if file_id.endswith("/"):
            return None  # a directory marker: never stored (see is_marker)
        with self._writes.head_locks.holding(file_id), self.turns.turn(file_id) as turn:
            try:
                self.check_condition(file_id, condition, turn)
            except S3Error as err:
                if err.code != "NoSuchKey":  # If-Match of a missing key: 204 as well (RGW; AWS has conditional
                    raise                    # deletes in directory buckets only)
                return None
            if versioning is None and self.current_etag(file_id) is None:
                return None
            turn.fence(f"removing {file_id!r}")
            marker = self._store.mark_removed(file_id, is_null_write(versioning), lease=lease)
            self.drop_replaced(file_id, versioning)
            return marker.version

    async def delete_many(self, bucket: str, body: bytes) -> Response:
        """DeleteObjects of the keys ``body`` lists (checked: :mod:`.request_body`)."""
        await self.require_bucket(bucket)
        if len(body) > MAX_DELETE_BODY:
            raise S3Error("MalformedXML", "The XML you provided was too large.")
        try:
            root = parse(body)
        except (ValueError, SyntaxError):
            raise S3Error("MalformedXML", "The XML you provided was not well-formed.") from None
        quiet = (root.findtext("Quiet") or "").strip().lower() == "true"
        objects = [(element.findtext("Key") or "", element.findtext("VersionId")) for element in root.iter("Object")]
        if len(objects) > 1000:
            raise S3Error("MalformedXML", "DeleteObjects takes at most 1000 keys.")
        versioning = await self.versioning(bucket)
        under_way = asyncio.Semaphore(DELETES_AT_ONCE)

        async def outcome(key: str, version: str | None) -> tuple[bool, dict]:
            async with under_way:
                try:
                    check_id(f"{bucket}/{key}".removesuffix("/"))
                    return True, {"Key": key, **await self._delete_one(f"{bucket}/{key}", version, versioning)}
                except Exception as err:  # noqa: BLE001 - one key's failure is reported in the result, S3's way
                    return False, {"Key": key, "VersionId": version, "Code": getattr(err, "code", "InternalError"),
                                   "Message": str(err)}

        outcomes = await asyncio.gather(*(outcome(key, version) for key, version in objects))
        deleted = [fields for ok, fields in outcomes if ok]
        errors = [fields for ok, fields in outcomes if not ok]
        return xml_response(document("DeleteResult", {"Deleted": [] if quiet else deleted, "Error": errors}))

    async def _delete_one(self, file_id: str, version: str | None, versioning: str | None) -> dict:
        """One object of DeleteObjects: its ``Deleted`` fields but the key."""
        if version is not None:
            dropped = await self._writes.write(partial(self.drop_version, file_id, version))
            return {"VersionId": version, **({"DeleteMarker": True, "DeleteMarkerVersionId": version}
                                             if dropped else {})}
        marker = await self._writes.write(partial(self._remove, file_id, None, versioning))
        headers = marker_headers(versioning, marker)
        return {"DeleteMarker": True, "DeleteMarkerVersionId": headers["x-amz-version-id"]} if headers else {}

    def drop_version(self, file_id: str, text: str, lease: WriterLease) -> bool:
        """DeleteObject of the version ``text`` (write thread, under the key's lock; the current one too: the
        previous becomes current, :func:`~.version_rows.drop`); whether it was a delete marker."""
        with self._writes.head_locks.holding(file_id):
            rows = self.rows(file_id)
            dropping = matching(rows, text)
            if dropping:
                lease.fence(f"dropping a version of {file_id!r}")
                drop(self._store, file_id, rows, dropping)
            return any(row.deleted for row in dropping[:1])

    async def copy_source(self, request: Request) -> S3Object:
        """The head ``x-amz-copy-source`` names, its ``x-amz-copy-source-if-*`` conditions checked."""
        named = copy_source_of(request.headers)
        source = await self.head(named.bucket, named.key, named.version)
        check_read_conditions({name.removeprefix("x-amz-copy-source-"): value for name, value in
                               request.headers.items() if name.startswith("x-amz-copy-source-if-")}, source)
        return source

    async def copy(self, request: Request, bucket: str, key: str, versioning: str | None) -> Response:
        """CopyObject into ``bucket`` (authorized, of ``versioning``), the source's bucket authorized too."""
        file_id = check_id(f"{bucket}/{key}", storing=True)
        source = await self.copy_source(request)
        directive = request.headers.get("x-amz-metadata-directive", "COPY").upper()
        if directive not in ("COPY", "REPLACE"):
            raise invalid_argument("x-amz-metadata-directive must be COPY or REPLACE")
        if directive == "COPY" and source.info.id == file_id:
            raise S3Error("InvalidRequest", "This copy request is illegal because it is trying to copy an object "
                                            "to itself without changing the object's metadata.")
        tagging = request.headers.get("x-amz-tagging-directive", "COPY").upper()
        if tagging not in ("COPY", "REPLACE"):
            raise invalid_argument("x-amz-tagging-directive must be COPY or REPLACE")
        tags = source.tags if tagging == "COPY" else tags_of_header(request.headers.get("x-amz-tagging"))
        meta = (S3Object(source.info, None, source.content_type, source.user_meta, source.http_headers, tags)
                if directive == "COPY" else
                S3Object(source.info, None, request.headers.get("content-type"), user_meta(request.headers),
                         kept_headers(request.headers), tags))
        condition = condition_of(request.headers.get("if-match"), request.headers.get("if-none-match"))
        algorithm = requested_algorithm(request.headers)
        same_checksum = algorithm is None or (source.checksum is not None and source.checksum.algorithm == algorithm)
        if source.info.blocks and same_checksum:  # its block list is committed again: no block read, none written
            kept = meta.meta(source.etag.strip('"'), source.checksum, is_null_write(versioning))
            kept = replace(kept, parts=await on_pool(self.reads.pool, self.parts, source.info))
            head = await self._writes.write(partial(self.commit_blocks, [source.info], file_id, condition, kept,
                                                    versioning))
            etag, version = kept.etag, head.version
        else:  # an inline (or empty) source, or a checksum by another algorithm: its bytes are read and checksummed
            copied = await self._writes.write(partial(
                self.store_copy, source.info, file_id, condition, meta, versioning=versioning,
                algorithm=algorithm or (source.checksum.algorithm if source.checksum is not None else None)))
            etag, version = copied.etag, copied.version
        response = xml_response(document("CopyObjectResult", {"ETag": quoted(etag), "LastModified": s3_time(None)}))
        response.headers.update({"x-amz-copy-source-version-id": source.version_id,
                                 **version_headers(versioning, version)})
        return response

    def commit_blocks(self, parts: list[FileInfo], file_id: str, condition: WritePrecondition | None,
                      meta: ObjectMeta, versioning: str | None, lease: WriterLease) -> FileInfo:
        """Commit under ``file_id`` (a bucket of ``versioning``) the versions ``parts`` end to end, their block
        lists concatenated and cut again at their seams (:func:`~casstor_ops.store.engine.multipart.commit_parts`: every
        block checked as a store's found blocks are, only those around the seams read), under the key's lock; the
        precondition checked under its turn when the head is about to be written, the seams' work done. The head."""
        with self._writes.head_locks.holding(file_id), self.turns.turn(file_id) as turn:
            fence = checked_then_fenced(lambda: self.check_condition(file_id, condition, turn), lease.fence, turn.fence)
            head = commit_parts(self._store.session, self._store.settings, parts, file_id, fence, lambda: meta)
            self.drop_replaced(file_id, versioning)
            return head

    def store_copy(self, source: FileInfo, file_id: str, condition: WritePrecondition | None, meta: S3Object | None,
                   lease: WriterLease, span: tuple[int, int] | None = None, inline: bool = True,
                   versioning: str | None = ENABLED, algorithm: str | None = None) -> Copied:
        """Store the version ``source`` (its bytes ``span``, when given) again under ``file_id`` (a bucket of
        ``versioning``): its content flows from a read thread through a pipe; every block is found in the store,
        so none is written (but those cut at a span's ends). The copy keeps the checksum by ``algorithm`` of the
        bytes copied (None: none). A source read that fails or ends short fails the check before the head write
        (nothing committed)."""
        start, stop = span or (0, source.size)
        read_end, write_end = os.pipe()
        outcome: list[BaseException | None] = []

        def produce() -> None:
            try:
                with open(write_end, "wb") as out:
                    self._store.read(source, Span(out, start, stop) if span else out)
                outcome.append(None)
            except BaseException as err:  # noqa: BLE001 - handed to the check below
                outcome.append(err)

        def check_source() -> None:
            reader.join()
            if outcome[0] is not None:
                raise outcome[0]
            if body.size != stop - start:
                raise S3Error("InternalError", "the copy's source changed while it was read; copy it again")

        reader = threading.Thread(target=produce, name="casstor-s3-copy", daemon=True)
        reader.start()
        with open(read_end, "rb") as pipe:
            body = Digests(pipe, {}, also=algorithm)
            try:
                version = self.store_body(body, file_id, condition, meta, lease, check_source, inline, versioning,
                                          algorithm)
            finally:
                _drain(pipe)
                reader.join()
        return Copied(body.etag, version, body.checksum(algorithm) if algorithm else None)


@dataclass(frozen=True)
class Copied:
    """What :meth:`Objects.store_copy` committed: the copy's ETag, version and checksum (None: none asked)."""

    etag: str
    version: uuid.UUID
    checksum: Checksum | None


class Span(io.RawIOBase):
    """A writer passing on only the bytes from ``start`` to ``stop`` of what is written to it."""

    def __init__(self, out: io.BufferedWriter, start: int, stop: int) -> None:
        super().__init__()
        self._out, self._start, self._stop, self._at = out, start, stop, 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        begin, end = self._at, self._at + len(data)
        self._at = end
        if end > self._start and begin < self._stop:
            self._out.write(memoryview(data)[max(0, self._start - begin):min(len(data), self._stop - begin)])
        return len(data)


def _drain(pipe: io.BufferedReader) -> None:
    """Read what the source thread still writes (a failed store stopped reading), so it can end."""
    while pipe.read(1 << 20):
        pass


def version_headers(versioning: str | None, version: uuid.UUID | None) -> dict[str, str]:
    """``x-amz-version-id`` of a write's response: in a versioning-enabled bucket only."""
    return {"x-amz-version-id": str(version)} if versioning == ENABLED and version is not None else {}


def marker_headers(versioning: str | None, marker: uuid.UUID | None) -> dict[str, str]:
    """A DeleteObject response's headers: the delete marker's (none in a bucket never versioned)."""
    if marker is None or versioning is None:
        return {}
    return {"x-amz-delete-marker": "true", "x-amz-version-id": NULL if is_null_write(versioning) else str(marker)}


def xml_response(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type="application/xml")


