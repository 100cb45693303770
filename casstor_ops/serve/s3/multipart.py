"""S3 multipart uploads: Create, UploadPart, UploadPartCopy, Complete, Abort, ListParts, ListMultipartUploads.

An upload is a hidden directory of the store, ``.casstor-uploads/BUCKET/UPLOAD_ID/``
(:data:`~casstor_ops.store.engine.multipart.UPLOADS`; no bucket's listing shows it):
its record ``upload`` (a small file: the key, Content-Type and
``x-amz-meta-*`` as JSON) and one file per part, ``00001`` to ``10000``, each
chunked and deduplicated like any file and kept with its MD5 as ETag. Complete
commits the object's new version as the parts' block lists end to end, the
blocks around each seam cut again as one store of the object cuts them
(:func:`~casstor_ops.store.engine.multipart.commit_parts`: ~800 KiB read a seam), its
ETag ``MD5(part MD5s)-N`` as S3 makes it, then removes the parts and marks the
record completed: a Complete sent again (a client retrying) answers the object
again, as S3 and RGW do, until the record is forgotten with the abandoned ones.
An upload created with ``x-amz-checksum-algorithm`` has that checksum of
every part computed and kept with it; Complete keeps the object's (COMPOSITE
or FULL_OBJECT, :func:`~.checksums.multipart_checksum`) and its parts' sizes
and checksums with the object's version (for ``partNumber`` and
GetObjectAttributes).
UploadPartCopy of a whole object is a concatenation of one list too (no byte
read), keeping the source's checksum; with ``x-amz-copy-source-range``, or when
the upload asks for a checksum the source does not keep of all its bytes, the
bytes are read and stored (their blocks are found: dedup) and the part's
checksum computed as they pass. An upload nobody completes or aborts is
forgotten after ``SAFETY.abandoned_upload_s``
(:mod:`casstor_ops.store.coordination.safety`).
ListMultipartUploads reads the records of the bucket's uploads together
(:data:`RECORDS_AT_ONCE`) and shows them by key, a key's oldest first: an
upload's ID starts with the time it was made (:func:`new_upload_id`).

Example::

    >>> uploads = Multipart(store, objects, writes, buckets)                    # doctest: +SKIP
    >>> await uploads.create(request, "photos", "big.iso")                       # doctest: +SKIP

Failures (:class:`~.errors.S3Error`): an unknown upload ID: NoSuchUpload; a
part list out of order: InvalidPartOrder; a part missing or with another
ETag: InvalidPart; a part but the last under 5 MiB: EntityTooSmall; a bad
part number: InvalidArgument; the object's preconditions: PreconditionFailed; a
checksum that does not match: BadDigest (the object's), InvalidPart (a part's).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import itertools
import json
import os
import re
import time
import uuid
from functools import partial
from operator import attrgetter

from starlette.requests import Request
from starlette.responses import Response

from casstor_ops.errors import FileChangedError, NotFoundError
from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.s3.buckets import owner_of
from casstor_ops.serve.s3.checksums import (FULL_OBJECT, Checksum, checksum_type, multipart_checksum,
                                            requested_algorithm, stored_checksum)
from casstor_ops.serve.s3.errors import S3Error, invalid_argument
from casstor_ops.serve.s3.listing import Listing, VersionDigests, max_keys, rolled_up
from casstor_ops.serve.s3.objects import (Objects, condition_of, kept_headers, part_number, quoted, s3_time,
                                          user_meta, version_headers, xml_response)
from casstor_ops.serve.s3.sigv4 import Signed
from casstor_ops.serve.s3.tags import tags_of_header
from casstor_ops.serve.s3.version_rows import ENABLED, is_null_write
from casstor_ops.serve.s3.xml import document, parse
from casstor_ops.serve.writes import Writes
from casstor_ops.store.api import FileInfo, Store
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.multipart import UPLOADS, commit_parts
from casstor_ops.store.ids import check_id
from casstor_ops.store.namespace.listing import Entry, directory_entries
from casstor_ops.store.records import ObjectMeta

MIN_PART_BYTES = 5 * 1024 ** 2  # S3's least size of a part but the last
MAX_COMPLETE_BODY = 2 << 20
# Upload records ListMultipartUploads reads at once, on the driver's callbacks (a stat, then the record's list and
# block: three requests). 1,000 uploads listed in 10.1-12.5 s one at a time on a worker thread (bench.serve
# --list-uploads, a node just started), 2.9 s 32 at a time and 2.7 s 128 at a time: the same within this machine's
# spread, and 32 keeps other requests' answers from queueing behind one listing's.
RECORDS_AT_ONCE = 32
RECORD = "upload"
_UPLOAD_ID = re.compile(r"[0-9a-f]{32}")


def upload_dir(bucket: str, upload_id: str) -> str:
    return f"{UPLOADS}{bucket}/{upload_id}/"


def part_id(bucket: str, upload_id: str, number: int) -> str:
    return f"{upload_dir(bucket, upload_id)}{number:05d}"


def multipart_etag(md5s: list[str]) -> str:
    """S3's ETag of a multipart object: the MD5 of its parts' MD5s, then ``-`` and their count."""
    return hashlib.md5(b"".join(bytes.fromhex(m) for m in md5s)).hexdigest() + f"-{len(md5s)}"


def new_upload_id() -> str:
    """A new upload's ID: 32 hex digits, the creating gateway's clock in nanoseconds then 64 random bits.

    Why the clock first: ListMultipartUploads shows a key's uploads oldest first and pages on by the last ID shown
    (``upload-id-marker``), so the two orders must be one. With random IDs (before 2026-11-30) a page that ended
    between two uploads of a key listed one twice and skipped another; those IDs still list once each, in ID order.
    """
    return f"{time.time_ns():016x}{os.urandom(8).hex()}"


def _record_id(bucket: str, upload_id: str) -> str:
    """The ID of the upload's record (NoSuchUpload for a string that is not an upload ID)."""
    if not _UPLOAD_ID.fullmatch(upload_id):
        raise no_such_upload(upload_id)
    return upload_dir(bucket, upload_id) + RECORD


def _parsed(bucket: str, upload_id: str, head: FileInfo, content: bytes, key: str | None = None,
            completed: bool = False) -> Upload:
    """The record ``content`` as an :class:`Upload` (NoSuchUpload if it is another key's, or completed unless
    ``completed``)."""
    fields = json.loads(content)
    if (key is not None and fields["key"] != key) or ("completed" in fields and not completed):
        raise no_such_upload(upload_id)
    return Upload(bucket, upload_id, fields["key"], fields, s3_time(head.committed_at))


def no_such_upload(upload_id: str) -> S3Error:
    return S3Error("NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the "
                                   "upload may have been aborted or completed.", UploadId=upload_id)


class Upload:
    """One upload's record (``fields``, its JSON as stored): its key, the object's Content-Type, user metadata,
    kept headers and tags, the checksum algorithm and type it asked for (None: none), and once completed the
    object's ETag and checksum (and its version, in the process that completed it)."""

    def __init__(self, bucket: str, upload_id: str, key: str, fields: dict, initiated: str) -> None:
        self.bucket, self.id, self.key, self.initiated = bucket, upload_id, key, initiated
        self.fields = fields
        self.content_type, self.meta, self.tags = fields["content_type"], fields["meta"], fields.get("tags", {})
        self.http_headers: dict[str, str] = fields.get("headers", {})  # Cache-Control, ... (objects.KEPT_HEADERS)
        self.checksum: str | None = fields.get("checksum")
        self.checksum_type: str | None = fields.get("checksum_type")
        self.completed: str | None = fields.get("completed")  # the object's ETag once completed
        self.completed_checksum: str | None = fields.get("completed_checksum")
        # Not kept in the record: a record of the same content is the same block (an upload repeated stores none);
        # a Complete sent again finds it among the key's versions by the ETag.
        self.completed_version: uuid.UUID | None = None

    def headers(self) -> dict[str, str]:
        """The upload's checksum algorithm and type as S3's headers name them."""
        if self.checksum is None:
            return {}
        return {"x-amz-checksum-algorithm": self.checksum.upper(), "x-amz-checksum-type": self.checksum_type}

    def fields_of_checksum(self) -> dict[str, str]:
        """The upload's checksum algorithm and type as S3's XML (ListParts) names them."""
        if self.checksum is None:
            return {}
        return {"ChecksumAlgorithm": self.checksum.upper(), "ChecksumType": self.checksum_type}


class Multipart:
    """The multipart operations of one server (see the module docstring)."""

    def __init__(self, store: Store, objects: Objects, writes: Writes, listing: Listing) -> None:
        self._store = store
        self._st = Statements.for_session(store.session)
        self._objects = objects
        self._writes = writes
        self._listing = listing
        self._pool = objects.reads.pool

    # -- the record

    def _record(self, bucket: str, upload_id: str, key: str | None = None, completed: bool = False) -> Upload:
        """The upload's record (NoSuchUpload if it is not there, is another key's, or is completed unless
        ``completed``)."""
        try:
            head = self._store.stat(_record_id(bucket, upload_id))
        except NotFoundError:
            raise no_such_upload(upload_id) from None
        out = io.BytesIO()
        self._store.read(head, out)
        return _parsed(bucket, upload_id, head, out.getvalue(), key, completed)

    async def _record_under_way(self, bucket: str, upload_id: str) -> Upload | None:
        """The record of an upload not completed, read on the driver's callbacks (no worker thread); None if it is
        not there (completed or aborted meanwhile; or since, and its record's version already reclaimed)."""
        try:
            head = await self._objects.reads.stat(_record_id(bucket, upload_id))
            return _parsed(bucket, upload_id, head, await self._objects.reads.small_content(head))
        except (NotFoundError, FileChangedError, S3Error):
            return None

    async def create(self, request: Request, bucket: str, key: str) -> Response:
        check_id(f"{bucket}/{key}", storing=True)
        await self._objects.require_bucket(bucket)
        upload_id = new_upload_id()
        headers = request.headers
        algorithm = requested_algorithm(headers)
        fields = {"key": key, "content_type": headers.get("content-type"), "meta": user_meta(headers),
                  "headers": kept_headers(headers), "tags": tags_of_header(headers.get("x-amz-tagging")),
                  "checksum": algorithm,
                  "checksum_type": checksum_type(algorithm, headers.get("x-amz-checksum-type")) if algorithm else None}
        record = json.dumps(fields).encode("utf-8")
        await self._writes.write(lambda lease: self._store.put(io.BytesIO(record),
                                                               upload_dir(bucket, upload_id) + RECORD, lease=lease))
        response = xml_response(document("InitiateMultipartUploadResult",
                                         {"Bucket": bucket, "Key": key, "UploadId": upload_id}))
        response.headers.update(Upload(bucket, upload_id, key, fields, "").headers())
        return response

    # -- parts

    async def upload_part(self, request: Request, bucket: str, key: str, query: dict[str, str],
                          signed: Signed) -> Response:
        number = part_number(query.get("partNumber"))
        self._objects.check_size(request)
        upload = await on_pool(self._pool, self._record, bucket, query["uploadId"], key)
        body = self._objects.body(request, signed, also=upload.checksum)
        target = part_id(bucket, query["uploadId"], number)

        def store(lease: WriterLease) -> None:
            self._store.put(body, target, lease=lease, before_commit=body.check, inline=False,
                            object_meta=lambda: ObjectMeta(body.etag, checksum=stored_checksum(checksum())))

        def checksum() -> Checksum | None:
            return body.checksum(upload.checksum)

        await self._writes.write(store)
        return Response(status_code=200, headers={"etag": quoted(body.etag), **_headers(checksum())})

    async def copy_part(self, request: Request, bucket: str, key: str, query: dict[str, str]) -> Response:
        number = part_number(query.get("partNumber"))
        upload = await on_pool(self._pool, self._record, bucket, query["uploadId"], key)
        source = await self._objects.copy_source(request)
        target = part_id(bucket, query["uploadId"], number)
        wanted = request.headers.get("x-amz-copy-source-range")
        checksum = _of_all_bytes(source.checksum, upload.checksum)
        if wanted is None and (upload.checksum is None or checksum is not None):
            etag = source.etag.strip('"')
            meta = ObjectMeta(etag, checksum=stored_checksum(checksum))
            await self._writes.write(lambda lease: commit_parts(self._store.session, self._store.settings,
                                                                [source.info], target, lease.fence, lambda: meta))
        else:  # a range, or a checksum the source does not carry: its bytes are read (and their blocks found)
            span = _copy_range(wanted, source.info.size) if wanted is not None else None
            copied = await self._writes.write(partial(self._objects.store_copy, source.info, target, None, None,
                                                      span=span, inline=False, algorithm=upload.checksum))
            etag, checksum = copied.etag, copied.checksum
        return xml_response(document("CopyPartResult", {"ETag": quoted(etag), "LastModified": s3_time(None),
                                                        **(checksum.fields() if checksum else {})}))

    def _parts(self, bucket: str, upload_id: str, after: int = 0) -> list:
        """The upload's part entries from part ``after + 1`` on, in part order."""
        entries = directory_entries(self._store.session, self._st, upload_dir(bucket, upload_id), f"{after + 1:05d}")
        return [entry for entry in entries if entry.name != RECORD and entry.file is not None]

    async def list_parts(self, bucket: str, key: str, query: dict[str, str], initiator: str) -> Response:
        upload = await on_pool(self._pool, self._record, bucket, query["uploadId"], key)
        try:
            after = int(query.get("part-number-marker", "0"))
        except ValueError:
            raise invalid_argument("part-number-marker must be a number") from None
        limit = max_keys(query.get("max-parts"))
        parts = await on_pool(self._pool, self._parts, bucket, upload.id, after)
        shown = parts[:limit]
        digests = await on_pool(self._pool, self._listing.digests, shown)
        owner = owner_of(initiator)  # the bucket's owner: no other user may start an upload in it
        fields = {"Bucket": bucket, "Key": key, "UploadId": upload.id, "Initiator": owner, "Owner": owner,
                  "StorageClass": "STANDARD", "PartNumberMarker": after,
                  "NextPartNumberMarker": int(shown[-1].name) if shown else after, "MaxParts": limit,
                  "IsTruncated": len(parts) > limit, **upload.fields_of_checksum(),
                  "Part": [_listed_part(e, digests[e.file.id]) for e in shown]}
        return xml_response(document("ListPartsResult", fields))

    async def list_uploads(self, bucket: str, query: dict[str, str], initiator: str) -> Response:
        await self._objects.require_bucket(bucket)
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        key_marker, id_marker = query.get("key-marker", ""), query.get("upload-id-marker", "")
        limit = max_keys(query.get("max-uploads"))
        chosen = [u for u in sorted(await self._uploads(bucket), key=lambda u: (u.key, u.id))  # new_upload_id
                  if u.key.startswith(prefix) and (u.key > key_marker or (u.key == key_marker and id_marker
                                                                         and u.id > id_marker))]
        items = list(itertools.islice(rolled_up(chosen, attrgetter("key"), prefix, delimiter, key_marker), limit + 1))
        shown = items[:limit]
        last = shown[-1] if shown else None
        owner = owner_of(initiator)  # the bucket's owner: no other user may start an upload in it
        fields = {"Bucket": bucket, "KeyMarker": key_marker, "UploadIdMarker": id_marker,
                  "NextKeyMarker": last if isinstance(last, str) else getattr(last, "key", None),
                  "NextUploadIdMarker": getattr(last, "id", None), "MaxUploads": limit,
                  "Prefix": prefix, "Delimiter": delimiter or None, "IsTruncated": len(items) > limit,
                  "Upload": [{"Key": u.key, "UploadId": u.id, "Initiator": owner, "Owner": owner,
                              "StorageClass": "STANDARD", "Initiated": u.initiated}
                             for u in shown if isinstance(u, Upload)],
                  "CommonPrefixes": [{"Prefix": p} for p in shown if isinstance(p, str)]}
        return xml_response(document("ListMultipartUploadsResult", fields))

    async def _uploads(self, bucket: str) -> list[Upload]:
        """The records of the bucket's uploads under way, :data:`RECORDS_AT_ONCE` read at a time."""
        entries = await on_pool(self._pool, lambda: list(directory_entries(self._store.session, self._st,
                                                                           f"{UPLOADS}{bucket}/")))
        under_way = asyncio.Semaphore(RECORDS_AT_ONCE)

        async def record(upload_id: str) -> Upload | None:
            async with under_way:
                return await self._record_under_way(bucket, upload_id)

        found = await asyncio.gather(*(record(entry.name.rstrip("/")) for entry in entries))
        return [upload for upload in found if upload is not None]

    # -- the end of an upload

    async def complete(self, request: Request, bucket: str, key: str, query: dict[str, str], body: bytes) -> Response:
        file_id = check_id(f"{bucket}/{key}", storing=True)
        upload = await on_pool(self._pool, self._record, bucket, query["uploadId"], key, True)
        if len(body) > MAX_COMPLETE_BODY:
            raise S3Error("MalformedXML", "The XML you provided was too large.")
        try:
            listed = list(parse(body).iter("Part"))
            wanted = [(int(p.findtext("PartNumber") or ""), (p.findtext("ETag") or "").strip().strip('"'))
                      for p in listed]
        except (ValueError, SyntaxError):
            raise S3Error("MalformedXML", "The XML you provided was not well-formed.") from None
        if not wanted:
            raise S3Error("MalformedXML", "You must specify at least one part.")
        if [n for n, _ in wanted] != sorted(n for n, _ in wanted):
            raise S3Error("InvalidPartOrder", "The list of parts was not in ascending order.")
        versioning = await self._objects.versioning(bucket)
        if upload.completed is None:
            await self._complete(request, upload, file_id, listed, wanted, versioning)
        elif versioning == ENABLED:  # a Complete sent again (the client retries): the version it made
            upload.completed_version = await on_pool(self._pool, self._completed_version, file_id, upload.completed)
        checksum = Checksum.parse(upload.completed_checksum)
        response = xml_response(document("CompleteMultipartUploadResult",
                                         {"Location": f"/{bucket}/{key}", "Bucket": bucket, "Key": key,
                                          "ETag": quoted(upload.completed), **(checksum.fields() if checksum else {})}))
        response.headers.update(version_headers(versioning, upload.completed_version))
        return response

    async def _complete(self, request: Request, upload: Upload, file_id: str, listed: list,
                        wanted: list[tuple[int, str]], versioning: str | None) -> None:
        """Commit the object of the parts ``wanted`` (in a bucket of ``versioning``) and forget the upload (marked
        completed: ``upload.completed``, ``completed_checksum`` and ``completed_version`` set)."""
        by_part = {int(p.findtext("PartNumber")): p.findtext(f"Checksum{(upload.checksum or '').upper()}")
                   for p in listed}  # a part listed twice (re-sent): its last entry, as RGW
        wanted = list(dict(wanted).items())
        parts, digests = await on_pool(self._pool, self._chosen, upload, wanted)
        etag = multipart_etag([kept.etag.partition("-")[0] for kept in digests])
        layout = self._layout(upload, parts, digests, [by_part[n] for n, _ in wanted])
        checksum = self._object_checksum(upload, layout, request.headers)
        condition = condition_of(request.headers.get("if-match"), request.headers.get("if-none-match"))
        meta = ObjectMeta(etag, upload.content_type, upload.meta, headers=upload.http_headers, tags=upload.tags,
                          checksum=stored_checksum(checksum), parts=layout, null_version=is_null_write(versioning))
        head = await self._writes.write(partial(self._objects.commit_blocks, parts, file_id, condition, meta,
                                                versioning))
        upload.completed, upload.completed_checksum = etag, stored_checksum(checksum)
        upload.completed_version = head.version
        await self._writes.write(partial(self._forget_upload, upload))

    def _completed_version(self, file_id: str, etag: str) -> uuid.UUID | None:
        """The newest version of ``file_id`` with the completed upload's ``etag`` (None: forgotten since)."""
        return next((row.version for row in self._objects.rows(file_id) if not row.deleted and row.etag == etag),
                    None)

    @staticmethod
    def _layout(upload: Upload, parts: list[FileInfo], digests: list[VersionDigests], given: list[str | None]
                ) -> list[tuple[int, str | None]]:
        """Each part's size and checksum (by the upload's algorithm; None without one); InvalidPart for a part
        whose checksum in the request is not the one it was uploaded with."""
        if upload.checksum is None:
            return [(part.size, None) for part in parts]
        layout = []
        for part, kept, wanted in zip(parts, digests, given):
            stored = kept.checksum
            value = stored.value if stored is not None and stored.algorithm == upload.checksum else None
            if wanted is not None and wanted != value:
                raise S3Error("InvalidPart", "One or more of the specified parts could not be found or its "
                                             "checksum did not match.", PartNumber=part.id.rpartition("/")[2])
            layout.append((part.size, value))
        return layout

    @staticmethod
    def _object_checksum(upload: Upload, layout: list[tuple[int, str | None]], headers) -> Checksum | None:
        """The object's checksum from its parts' (None: the upload asked for none, or a part has none: a copied
        one); BadDigest if the request's ``x-amz-checksum-*`` names another."""
        checksum = None
        if upload.checksum is not None and all(value is not None for _, value in layout):
            checksum = multipart_checksum(upload.checksum, upload.checksum_type, layout)
        for name, value in headers.items():
            if name.startswith("x-amz-checksum-") and name not in ("x-amz-checksum-type", "x-amz-checksum-algorithm") \
                    and (checksum is None or checksum.headers().get(name) != value.strip()):
                raise S3Error("BadDigest", f"The {name.removeprefix('x-amz-checksum-').upper()} you specified did "
                                           f"not match the calculated checksum.")
        return checksum

    def _chosen(self, upload: Upload, wanted: list[tuple[int, str]]
                ) -> tuple[list[FileInfo], list[VersionDigests]]:
        """The named parts' heads and digests (one read a part); InvalidPart for one missing or with another ETag,
        EntityTooSmall."""
        stored = {int(e.name): e for e in self._parts(upload.bucket, upload.id)}
        chosen = [stored.get(number) for number, _ in wanted]
        digests = self._listing.digests([e for e in chosen if e is not None])
        for (number, etag), entry in zip(wanted, chosen):
            if entry is None or digests[entry.file.id].etag != etag:
                raise S3Error("InvalidPart", "One or more of the specified parts could not be found or its entity "
                                             "tag did not match.", PartNumber=str(number), ETag=etag)
        for (number, _), entry in zip(wanted[:-1], chosen[:-1]):
            if entry.file.size < MIN_PART_BYTES:
                raise S3Error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object "
                                                "size.", PartNumber=str(number))
        return [e.file for e in chosen], [digests[e.file.id] for e in chosen]

    def _forget_upload(self, upload: Upload, lease: WriterLease) -> None:
        """Remove the upload's parts (delete markers: forget drops them, reclaim their blocks), then its record; a
        completed upload's record stays, saying so, for a Complete sent again (until forget drops it as
        abandoned: a second Complete is then NoSuchUpload)."""
        self._store.remove_all([entry.file.id for entry in self._parts(upload.bucket, upload.id)], lease=lease)
        record = upload_dir(upload.bucket, upload.id) + RECORD
        if upload.completed is None:
            self._store.remove(record, lease=lease)
        else:
            completed = {**upload.fields, "completed": upload.completed,
                         "completed_checksum": upload.completed_checksum}
            self._store.put(io.BytesIO(json.dumps(completed).encode()), record, lease=lease)

    async def abort(self, bucket: str, key: str, query: dict[str, str]) -> Response:
        upload = await on_pool(self._pool, self._record, bucket, query["uploadId"], key)
        await self._writes.write(partial(self._forget_upload, upload))
        return Response(status_code=204)


def _listed_part(entry: Entry, kept: VersionDigests) -> dict:
    """A part as ListParts answers it, with its checksum's value when it was uploaded with one (as S3 does)."""
    return {"PartNumber": int(entry.name), "LastModified": s3_time(entry.file.committed_at), "ETag": quoted(kept.etag),
            "Size": entry.file.size, **(kept.checksum.value_field() if kept.checksum else {})}


def _of_all_bytes(checksum: Checksum | None, algorithm: str | None) -> Checksum | None:
    """``checksum`` if it is by ``algorithm`` and of all the object's bytes (not COMPOSITE: of its parts' own)."""
    if checksum is None or checksum.algorithm != algorithm or checksum.type != FULL_OBJECT:
        return None
    return checksum


def _copy_range(header: str, size: int) -> tuple[int, int]:
    """``bytes=A-B`` of x-amz-copy-source-range as [A, B+1); InvalidArgument if malformed, InvalidRange (S3's
    answer) if it ends past the source."""
    match = re.fullmatch(r"bytes=(\d+)-(\d+)", header.strip())
    if not match or int(match[1]) > int(match[2]):
        raise invalid_argument("The x-amz-copy-source-range value must be of the form bytes=first-last where "
                               "first and last are the zero-based offsets of the first and last bytes to copy")
    if int(match[2]) >= size:
        raise S3Error("InvalidRange", "The requested range is not satisfiable", ActualObjectSize=str(size),
                      RangeRequested=header)
    return int(match[1]), int(match[2]) + 1


def _headers(checksum: Checksum | None) -> dict[str, str]:
    return {f"x-amz-checksum-{checksum.algorithm}": checksum.value} if checksum is not None else {}
