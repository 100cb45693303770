"""The S3 dispatcher: :class:`S3Handlers`, the plain server's handlers with S3's requests, signatures and errors.

Every request is authenticated first (:func:`~.sigv4.authenticate`: no
anonymous access), then authorized (the bucket, and a copy's source bucket,
must be the caller's: :meth:`~.buckets.Buckets.authorize`; CreateBucket and
ListBuckets excepted), then routed by path-style address and query (a
virtual-hosted-style request's path made path-style first: :mod:`.addressing`); but a CORS
preflight (``OPTIONS``, which browsers send unsigned: :mod:`.cors`) and a
browser form's POST Object (signed by its policy: :mod:`.post_object`):

=====================================  ==========================================
``GET /``                              ListBuckets
``PUT|HEAD|DELETE /b``                 CreateBucket, HeadBucket, DeleteBucket
``GET /b`` (``list-type=2``)           ListObjectsV2, else ListObjects (v1);
                                       ``?location``, ``?versioning`` answered
``POST /b?delete``                     DeleteObjects
``PUT /b/k``                           PutObject, or CopyObject (``x-amz-copy-source``)
``GET|HEAD /b/k``                      GetObject, HeadObject (``?partNumber``: one part)
``GET /b/k?attributes``                GetObjectAttributes (:mod:`.attributes`)
``PUT|GET|DELETE /b[/k]?tagging``      Put/Get/DeleteObjectTagging, ...BucketTagging (:mod:`.tagging`)
``DELETE /b/k``                        DeleteObject (``?versionId``: that version)
``GET /b?versions``                    ListObjectVersions (:mod:`.versions`)
``PUT|GET /b?versioning``              Put/GetBucketVersioning
``PUT|GET|DELETE /b?cors``             Put/Get/DeleteBucketCors (:mod:`.cors`)
``OPTIONS /b[/k]``                     the CORS preflight
``POST /b`` (``multipart/form-data``)  POST Object (:mod:`.post_object`)
``GET /b?uploads``                     ListMultipartUploads
``POST /b/k?uploads``                  CreateMultipartUpload
``PUT /b/k?uploadId&partNumber``       UploadPart, or UploadPartCopy
``GET|POST|DELETE /b/k?uploadId``      ListParts, CompleteMultipartUpload,
                                       AbortMultipartUpload (:mod:`.multipart`)
``GET|PUT /b?acl``, ``/b/k?acl``       Get/PutBucketAcl, Get/PutObjectAcl (:mod:`.acl`)
``GET /b/k?torrent``                   NoSuchKey: no torrent is kept
=====================================  ==========================================

A request with an ``Origin`` gets the bucket's matching CORS headers on its
answer. Anything else (policies, lifecycle, ...) is answered
NotImplemented (501). The engine is the plain server's (:class:`~..app.Handlers`:
its read and write pools, shared lease, key locks, body deadlines, metrics).

Example::

    >>> handlers = S3Handlers(store, leases, policy, metrics, cache, secrets={"AK": "SK"})  # doctest: +SKIP

Failures: every refusal is an S3 XML error document with S3's code and status
(:mod:`.errors`) and one log line; a store error is mapped from its
:mod:`..status` status (404 NoSuchKey, 503 ServiceUnavailable with
Retry-After, SlowDown during a reclaim window, 500 InternalError for a bug).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Mapping
from functools import partial
from urllib.parse import parse_qsl, unquote

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from casstor_ops.errors import CasstorError
from casstor_ops.serve.app import Handlers
from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.content_cache import ContentCache
from casstor_ops.serve.metrics import Metrics
from casstor_ops.serve.policy import Policy
from casstor_ops.serve.s3.acl import Acls
from casstor_ops.serve.s3.addressing import Addressing
from casstor_ops.serve.s3.attributes import get_attributes
from casstor_ops.serve.s3.buckets import Bucket, Buckets, ReadGrant, location_of, max_buckets, owner_of
from casstor_ops.serve.s3.cors import Cors
from casstor_ops.serve.s3.errors import S3Error, render
from casstor_ops.serve.s3.listing import (Listing, VersionDigests, decode_token, encode_token, encoded,
                                          max_keys)
from casstor_ops.serve.s3.multipart import Multipart
from casstor_ops.serve.s3.post_object import PostObjects, is_form_post
from casstor_ops.serve.s3.request_body import checked_body
from casstor_ops.serve.s3.versions import Versions
from casstor_ops.serve.s3.objects import Objects, copy_source_of, s3_time, xml_response
from casstor_ops.serve.s3.sigv4 import Signed, authenticate
from casstor_ops.serve.s3.tagging import Tagging
from casstor_ops.serve.s3.xml import document
from casstor_ops.serve.shared_lease import SharedLease
from casstor_ops.serve.status import one_line, status_of
from casstor_ops.store.api import Store
from casstor_ops.store.namespace.listing import Entry

log = logging.getLogger("casstor.serve")

_BY_STATUS = {400: "InvalidArgument", 404: "NoSuchKey", 408: "RequestTimeout", 411: "MissingContentLength",
              412: "PreconditionFailed", 413: "EntityTooLarge", 502: "InternalError"}


# The label an S3 refusal is counted under in casstor_serve_errors_total (serve.status.KINDS).
_KIND_BY_STATUS = {401: "unauthorized", 403: "unauthorized", 404: "not_found", 405: "method", 408: "body_timeout",
                   411: "length_required", 412: "precondition", 304: "precondition", 416: "bad_request",
                   500: "internal", 501: "method", 503: "unavailable"}


class S3Handlers(Handlers):
    """The S3 face of one server worker (see the module docstring)."""

    def __init__(self, store: Store, leases: SharedLease, policy: Policy, metrics: Metrics, cache: ContentCache,
                 worker: int = 0, secrets: dict[str, str] | None = None,
                 addressing: Addressing = Addressing()) -> None:
        super().__init__(store, leases, policy, metrics, cache, worker)
        self._secrets = secrets or {}
        self._addressing = addressing
        self._read_only = policy.read_only
        self.buckets = Buckets(store)
        self.objects = Objects(store, self.reads, self.writes, self.buckets, policy)
        self.listing = Listing(store)
        self.multipart = Multipart(store, self.objects, self.writes, self.listing)
        self.versions = Versions(store, self.objects, self.buckets, self.writes)
        self.cors = Cors(store, self.buckets, self.writes, self.reads.pool)
        self.posts = PostObjects(self.objects, self.writes, policy, self._secrets)
        self.acls = Acls(self.objects)
        self.tagging = Tagging(store, self.objects, self.buckets, self.writes)
        # Request IDs: this worker's random half and a count, not a uuid4 each (os.urandom costs a system call
        # and a wait for the GIL a request).
        self._id_prefix = os.urandom(4).hex().upper()
        self._request_numbers = itertools.count()

    async def handle(self, request: Request) -> Response:
        request_id = f"{self._id_prefix}{next(self._request_numbers) & 0xFFFFFFFF:08X}"
        path = "?"
        record = None  # the bucket's row, once this request read it
        try:
            sent_path = unquote(request.scope["raw_path"].decode("latin-1"), errors="strict")
            headers = {name: ",".join(request.headers.getlist(name)) for name in request.headers.keys()}
            path = self._addressing.path_style(headers.get("host"), sent_path)
            if request.method == "OPTIONS":  # a CORS preflight: browsers send it unsigned
                response = await self.cors.preflight(headers, path)
            elif is_form_post(request.method, path, headers.get("content-type")):  # signed by its policy
                self._check_writable(request.method)
                response = await self.posts.post(request, path.strip("/"))
            else:
                signed = authenticate(request.method, sent_path, request.scope["query_string"].decode("latin-1"),
                                      headers, self._secrets, time.time())
                self._check_writable(request.method)
                record, grant = await self._authorize(request, path, signed)
                response = await self._route(request, path, signed, record, grant)
        except S3Error as err:
            response = self._error(request.method, path, err, request_id)
        except ClientDisconnect:
            log.warning("%s %r: the client disconnected before the end of its body; nothing stored",
                        request.method, path)
            self.recorder.error("client_gone")
            response = Response(status_code=400)
        except asyncio.CancelledError:
            return self._cancelled(request.method, path)
        except Exception as err:  # every failure becomes an S3 error document and one log line (a bug: 500)
            response = self._error(request.method, path, _s3_error(err), request_id, err)
        response.headers["x-amz-request-id"] = request_id
        if "origin" in request.headers and request.method != "OPTIONS":
            await self.cors.decorate(response, request.headers["origin"], request.method, path, record)
        return response

    def _error(self, method: str, path: str, err: S3Error, request_id: str,
               cause: Exception | None = None) -> Response:
        kind = status_of(cause).kind if cause is not None else _KIND_BY_STATUS.get(err.status, "bad_request")
        self.recorder.error(kind)
        if err.code == "InternalError" and cause is not None:
            log.error("%s %r -> 500 (a bug): %s: %s", method, path, type(cause).__name__, one_line(cause))
            log.debug("traceback of the 500", exc_info=cause)
        else:
            log.warning("%s %r -> %d %s: %s", method, path, err.status, err.code, one_line(cause or err))
        headers = {**err.headers, **({"retry-after": "5"} if err.status == 503 else {})}
        body = b"" if method == "HEAD" or err.status == 304 else render(err, request_id)
        return Response(body, status_code=err.status, headers=headers, media_type="application/xml")

    async def _authorize(self, request: Request, path: str, signed: Signed) -> tuple[Bucket | None, ReadGrant | None]:
        """The row of the request's bucket, which the caller must own (None: ListBuckets, CreateBucket: any user
        may try a name); a copy's source bucket must be the caller's too. A GetObject or HeadObject of the
        newest version may take a remembered row, and then has the grant to check its object against."""
        bucket, _, key = path.lstrip("/").partition("/")
        record = grant = None
        if key and _newest_read(request):
            record, grant = await self.buckets.authorize_read(bucket, signed.access_key)
        elif bucket and (request.method != "PUT" or key or request.scope["query_string"]):
            record = await self.buckets.authorize(bucket, signed.access_key)
        if key and "x-amz-copy-source" in request.headers:
            await self.buckets.authorize(copy_source_of(request.headers).bucket, signed.access_key)
        return record, grant

    async def _route(self, request: Request, path: str, signed: Signed, record: Bucket | None,
                     grant: ReadGrant | None = None) -> Response:
        bucket, _, key = path.lstrip("/").partition("/")
        query = dict(parse_qsl(request.scope["query_string"].decode("latin-1"), keep_blank_values=True))
        method = request.method
        body = b""
        if _small_body(method, key, query, request.headers):  # a Complete's checksum headers are the object's
            body = await checked_body(request, signed, checksums=not (method == "POST" and "uploadId" in query))
        if not bucket:
            if method == "GET":
                return await on_pool(self.reads.pool, self._list_buckets, signed, query)
            raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")
        if "acl" in query:
            return await self.acls.answer(request, bucket, key, signed.access_key, query.get("versionId"), body)
        if "tagging" in query:
            return await self.tagging.handle(request, bucket, key, query.get("versionId"), body)
        if "torrent" in query and method == "GET" and key:
            raise S3Error("NoSuchKey", "No torrent is kept for this object (torrents are not supported).")
        unsupported = {"policy", "lifecycle", "torrent",
                       "website", "encryption", "object-lock", "retention", "legal-hold"} & query.keys()
        if unsupported:
            raise S3Error("NotImplemented", f"?{sorted(unsupported)[0]} is not supported by this server yet.")
        if not key and "cors" in query:
            return await self._cors(method, bucket, body)
        if not key:
            return await self._bucket(request, method, bucket, query, signed, body)
        if "uploads" in query or "uploadId" in query:
            return await self._multipart(request, method, bucket, key, query, signed, body)
        if method == "GET" and "attributes" in query:
            return await get_attributes(self.objects, request, bucket, key, query.get("versionId"))
        if method in ("GET", "HEAD"):
            return await self.objects.get(request, bucket, key, send_body=method == "GET",
                                          version=query.get("versionId"), part=query.get("partNumber"), grant=grant)
        if method == "PUT":
            if "x-amz-copy-source" in request.headers:
                return await self.objects.copy(request, bucket, key, record.versioning)
            return await self.objects.put(request, bucket, key, signed, record.versioning)
        if method == "DELETE":
            if "versionId" in query:
                return await self.versions.delete_version(bucket, key, query["versionId"])
            return await self.objects.delete(bucket, key, request.headers, record.versioning)
        raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")

    async def _cors(self, method: str, bucket: str, body: bytes) -> Response:
        if method == "PUT":
            return await self.cors.put(bucket, body)
        if method == "GET":
            return await self.cors.get(bucket)
        if method == "DELETE":
            return await self.cors.delete(bucket)
        raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")

    def _check_writable(self, method: str) -> None:
        if self._read_only and method in ("PUT", "POST", "DELETE"):
            raise S3Error("AccessDenied", "This server is read-only.")

    async def _multipart(self, request: Request, method: str, bucket: str, key: str, query: dict[str, str],
                         signed: Signed, body: bytes) -> Response:
        uploads = self.multipart
        if method == "POST":
            if "uploads" in query:
                return await uploads.create(request, bucket, key)
            return await uploads.complete(request, bucket, key, query, body)
        if "uploadId" not in query:
            raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")
        if method == "PUT":
            if "x-amz-copy-source" in request.headers:
                return await uploads.copy_part(request, bucket, key, query)
            return await uploads.upload_part(request, bucket, key, query, signed)
        if method == "GET":
            return await uploads.list_parts(bucket, key, query, signed.access_key)
        if method == "DELETE":
            return await uploads.abort(bucket, key, query)
        raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")

    async def _bucket(self, request: Request, method: str, bucket: str, query: dict[str, str],
                      signed: Signed, body: bytes) -> Response:
        pool = self.reads.pool
        if method == "PUT" and "versioning" in query:
            return await self.versions.put_config(bucket, body)
        if method == "PUT":
            location = location_of(body)
            await self.writes.write(lambda lease: self.buckets.create(bucket, signed.access_key, location))
            return Response(status_code=200, headers={"location": f"/{bucket}"})
        if method == "HEAD":
            return Response(status_code=200)  # authorized: it exists
        if method == "DELETE":
            await self.writes.write(lambda lease: self.buckets.delete(bucket))
            return Response(status_code=204)
        if method == "POST" and "delete" in query:
            return await self.objects.delete_many(bucket, body)
        if method == "GET" and "uploads" in query:
            return await self.multipart.list_uploads(bucket, query, signed.access_key)
        if method != "GET":
            raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")
        if "location" in query:
            row = await on_pool(pool, self.buckets.row, bucket)
            return xml_response(document("LocationConstraint", {}, text=row.location))
        if "versioning" in query:
            return await self.versions.get_config(bucket)
        if "versions" in query:
            return await self.versions.list(bucket, query, signed.access_key)
        return await on_pool(pool, partial(self._list_objects, bucket, query, signed.access_key))

    def _list_buckets(self, signed: Signed, query: dict[str, str]) -> Response:
        """The caller's buckets, ``max-buckets`` a page (from ``continuation-token`` on), ``prefix``."""
        limit = max_buckets(query.get("max-buckets"))
        token = query.get("continuation-token")
        prefix = query.get("prefix", "")
        rows = [row for row in self.buckets.all(signed.access_key, decode_token(token) if token else "")
                if row.name.startswith(prefix)]
        shown = rows[:limit]
        buckets = [{"Name": row.name, "CreationDate": s3_time(row.created_at)} for row in shown]
        return xml_response(document("ListAllMyBucketsResult", {
            "Owner": owner_of(signed.access_key), "Buckets": {"Bucket": buckets},
            "ContinuationToken": encode_token(shown[-1].name) if len(rows) > limit else None,
            "Prefix": prefix or None}))

    def _list_objects(self, bucket: str, query: dict[str, str], owner: str) -> Response:
        v2 = query.get("list-type") == "2"
        prefix, delimiter, encoding = query.get("prefix", ""), query.get("delimiter", ""), query.get("encoding-type")
        limit = max_keys(query.get("max-keys"))
        if v2:
            token = query.get("continuation-token")
            after = decode_token(token) if token is not None else query.get("start-after", "")
        else:
            after = query.get("marker", "")
        page = self.listing.page(bucket, prefix, delimiter, after, limit)
        root = len(bucket) + 1
        shows_owner = not v2 or query.get("fetch-owner") == "true"
        contents = [_listed_object(e, page.digests[e.file.id], e.file.id[root:], encoding, owner if shows_owner
                                   else None) for e in page.contents]
        # v1's Prefix is sent as it came (S3 and RGW do, botocore decodes it in v2 only)
        fields = {"Name": bucket, "Prefix": encoded(prefix, encoding) if v2 else prefix,
                  "Delimiter": encoded(delimiter, encoding) if delimiter else None, "MaxKeys": limit,
                  "EncodingType": encoding, "IsTruncated": page.truncated}
        if v2:
            fields.update({"KeyCount": len(page.contents) + len(page.prefixes),
                           "ContinuationToken": query.get("continuation-token"),
                           "NextContinuationToken": encode_token(page.last) if page.truncated else None,
                           "StartAfter": encoded(query["start-after"], encoding) if "start-after" in query else None})
        else:
            fields.update({"Marker": encoded(after, encoding),
                           "NextMarker": encoded(page.last, encoding) if page.truncated and delimiter else None})
        fields.update({"Contents": contents,
                       "CommonPrefixes": [{"Prefix": encoded(p, encoding)} for p in page.prefixes]})
        root_name = "ListBucketResult"
        return xml_response(document(root_name, fields))


def _listed_object(entry: Entry, kept: VersionDigests, key: str, encoding: str | None, owner: str | None) -> dict:
    """An object as a listing's Contents shows it: with its checksum's algorithm and type when it has one, as S3
    does, and its owner when asked for."""
    return {"Key": encoded(key, encoding), "LastModified": s3_time(entry.file.committed_at), "ETag": f'"{kept.etag}"',
            **(kept.checksum.listed_fields() if kept.checksum else {}), "Size": entry.file.size,
            "StorageClass": "STANDARD", "Owner": owner_of(owner) if owner is not None else None}


def _small_body(method: str, key: str, query: dict[str, str], headers: Mapping[str, str]) -> bool:
    """Whether the request's body is a small one to check before routing (:mod:`.request_body`): any POST's (a
    form's is routed before) and PUT's, but an object's or a part's data, which the store checks as it reads it."""
    if method == "POST":
        return True
    data = bool(key) and "x-amz-copy-source" not in headers and not {"acl", "tagging"} & query.keys()
    return method == "PUT" and not data


def _newest_read(request: Request) -> bool:
    """Whether the request is a GetObject or HeadObject of the newest version (its query names nothing but
    ``partNumber``, ``response-*``, botocore's ``x-id`` and a presigned URL's ``X-Amz-*``) with no ``Origin``
    (whose CORS headers are the fresh row's)."""
    if request.method not in ("GET", "HEAD") or "origin" in request.headers:
        return False
    names = (part.partition("=")[0] for part in request.scope["query_string"].decode("latin-1").split("&") if part)
    return all(name in ("partNumber", "x-id") or name.startswith(("X-Amz-", "response-")) for name in names)


def _s3_error(err: Exception) -> S3Error:
    """The S3 error a store error becomes (by its plain-server status)."""
    status = status_of(err)
    if status.code == 500:
        return S3Error("InternalError", "We encountered an internal error. Please try again.")
    if status.code == 503:
        code = "SlowDown" if status.kind == "window" else "ServiceUnavailable"
        return S3Error(code, "The store is unavailable now: send the request again later.")
    if isinstance(err, CasstorError) and status.code == 400 and "1024" in str(err):
        return S3Error("KeyTooLongError", "Your key is too long")
    return S3Error(_BY_STATUS.get(status.code, "InternalError"), one_line(err))
