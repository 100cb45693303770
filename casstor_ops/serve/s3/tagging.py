"""S3 tagging: Put/Get/DeleteObjectTagging (per version) and Put/Get/DeleteBucketTagging.

An object's tags are kept with its version (``versions.tags``): set at
PutObject, CreateMultipartUpload or CopyObject from ``x-amz-tagging``
(``k1=v1&k2``; CopyObject keeps the source's unless
``x-amz-tagging-directive: REPLACE``), and replaced or removed later by
``?tagging`` on that version (a lightweight transaction ``IF EXISTS``, so a
version forgotten meanwhile is not brought back as a row of tags only).
GET and HEAD answer their count (``x-amz-tagging-count``). A bucket's tags
are in its ``buckets`` row. Tags are answered by key (Cassandra's map order).

Example::

    >>> await Tagging(store, objects, buckets, writes).handle(request, "photos", "a.jpg", None)   # doctest: +SKIP

Failures (:class:`~.errors.S3Error`): tags S3 refuses: InvalidTag
(:mod:`.tags`); a body that is no Tagging document: MalformedXML; a bucket
without tags: NoSuchTagSet; the object's and bucket's own errors (NoSuchKey,
NoSuchVersion, NoSuchBucket).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.s3.buckets import Buckets
from casstor_ops.serve.s3.errors import S3Error, no_such_key
from casstor_ops.serve.s3.objects import Objects, xml_response
from casstor_ops.serve.s3.tags import MAX_BUCKET_TAGS, tag_set
from casstor_ops.serve.s3.xml import document
from casstor_ops.serve.writes import Writes
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.cql.statements import Statements

MAX_BODY = 64 << 10


def tagging_document(tags: dict[str, str] | None) -> Response:
    tag_list = [{"Key": k, "Value": v} for k, v in sorted((tags or {}).items())]
    return xml_response(document("Tagging", {"TagSet": {"Tag": tag_list}}))


class Tagging:
    """The tagging operations of one server (see the module docstring)."""

    def __init__(self, store: Store, objects: Objects, buckets: Buckets, writes: Writes) -> None:
        self._objects = objects
        self._buckets = buckets
        self._writes = writes
        self._session = store.session
        self._st = Statements.for_session(self._session)

    async def handle(self, request: Request, bucket: str, key: str, version: str | None, body: bytes) -> Response:
        """``?tagging`` of an object (``key``) or of a bucket (no key); ``body``: a PUT's, checked
        (:mod:`.request_body`)."""
        if not key:
            return await self._bucket(request, bucket, body)
        obj = await self._objects.head(bucket, key, version)
        headers = {"x-amz-version-id": str(obj.info.version)}
        if request.method == "GET":
            response = tagging_document(obj.tags)
            response.headers.update(headers)
            return response
        if request.method == "PUT":
            tags = tag_set(_within(body))
        elif request.method == "DELETE":
            tags = {}
        else:
            raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")
        await self._writes.write(lambda lease: self._set_object_tags(bucket, key, obj.info.version, tags, lease))
        return Response(status_code=204 if request.method == "DELETE" else 200, headers=headers)

    def _set_object_tags(self, bucket: str, key: str, version, tags: dict[str, str], lease: WriterLease) -> None:
        lease.fence("tagging an object")
        applied = self._session.execute(self._st.set_object_tags, (tags, f"{bucket}/{key}", version)).one()[0]
        if not applied:
            raise no_such_key(bucket, key)

    async def _bucket(self, request: Request, bucket: str, body: bytes) -> Response:
        pool = self._objects.reads.pool
        if request.method == "GET":
            tags = await on_pool(pool, self._bucket_tags, bucket)
            if not tags:
                raise S3Error("NoSuchTagSet", "The TagSet does not exist", f"/{bucket}", BucketName=bucket)
            return tagging_document(tags)
        if request.method == "PUT":
            tags = tag_set(_within(body), MAX_BUCKET_TAGS)
        elif request.method == "DELETE":
            tags = {}
        else:
            raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")
        await on_pool(pool, self._set_bucket_tags, bucket, tags)
        return Response(status_code=204 if request.method == "DELETE" else 200)

    def _bucket_tags(self, bucket: str) -> dict[str, str]:
        self._buckets.created(bucket)
        row = self._session.execute(self._st.read_bucket_tags, (bucket,)).one()
        return dict(row.tags or {}) if row is not None else {}

    def _set_bucket_tags(self, bucket: str, tags: dict[str, str]) -> None:
        if not self._session.execute(self._st.set_bucket_tags, (tags, bucket)).one()[0]:
            self._buckets.created(bucket)  # NoSuchBucket


def _within(body: bytes) -> bytes:
    if len(body) > MAX_BODY:
        raise S3Error("MalformedXML", "The XML you provided was too large.")
    return body
