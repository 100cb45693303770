"""S3 versioning on the store's history: Put/GetBucketVersioning, ListObjectVersions, DeleteObject of a version.

Every store keeps an object's versions as rows of ``versions`` (its
history: a PUT adds one, a DELETE adds a delete marker); a bucket's
versioning state (``buckets.versioning``) decides what forget keeps: an
Enabled bucket gets a retention policy that keeps every version
(:meth:`~.buckets.Buckets.set_versioning`), so each stays readable by its
``versionId``, the version's timeuuid as text. GetObject and HeadObject take
``versionId`` (:meth:`~.objects.Objects.head`) and answer ``x-amz-version-id``.
ListObjectVersions reads the bucket's entries under the prefix from the
directory index (removed objects' entries included) and each one's
versions, newest first, delete markers as ``DeleteMarker``. DeleteObject with
``versionId`` drops that version for good (its row, then its block list, as
forget does); dropping the current one is not supported yet.

Example::

    >>> await versions.list(bucket="photos", query={"prefix": "2024/"})   # doctest: +SKIP

Failures (:class:`~.errors.S3Error`): a malformed configuration:
MalformedXML; an unknown versionId: NoSuchVersion; the current version:
NotImplemented.
"""

from __future__ import annotations

import time
import uuid

from starlette.requests import Request
from starlette.responses import Response

from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.s3.buckets import Buckets, owner_of
from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.listing import max_keys
from casstor_ops.serve.s3.objects import Objects, quoted, s3_time, version_id, xml_response
from casstor_ops.serve.s3.xml import document, parse
from casstor_ops.serve.writes import Writes
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.namespace.entries import version_micros
from casstor_ops.store.namespace.listing import entries_under
from casstor_ops.store.statements import Statements

MAX_CONFIG_BODY = 64 * 1024


class Versions:
    """The versioning operations of one server (see the module docstring)."""

    def __init__(self, store: Store, objects: Objects, buckets: Buckets, writes: Writes) -> None:
        self._store = store
        self._st = Statements.for_session(store.session)
        self._objects = objects
        self._buckets = buckets
        self._writes = writes

    async def put_config(self, request: Request, bucket: str) -> Response:
        body = await request.body()
        try:
            status = (parse(body[:MAX_CONFIG_BODY]).findtext("Status") or "").strip()
        except (ValueError, SyntaxError):
            status = ""
        if status not in ("Enabled", "Suspended"):
            raise S3Error("MalformedXML", "The XML you provided was not well-formed or did not validate.")
        await self._writes.write(lambda lease: self._buckets.set_versioning(bucket, status))
        return Response(status_code=200)

    async def get_config(self, bucket: str) -> Response:
        status = await on_pool(self._objects.reads.pool, self._buckets.versioning, bucket)
        return xml_response(document("VersioningConfiguration", {"Status": status}))

    async def list(self, bucket: str, query: dict[str, str], owner: str) -> Response:
        await self._objects.require_bucket(bucket)
        return await on_pool(self._objects.reads.pool, self._list, bucket, query, owner_of(owner))

    def _list(self, bucket: str, query: dict[str, str], owner: dict[str, str]) -> Response:
        prefix, after, limit = query.get("prefix", ""), query.get("key-marker", ""), max_keys(query.get("max-keys"))
        root = bucket + "/"
        versions, markers, shown, truncated, last, last_version = [], [], 0, False, "", None
        for entry in entries_under(self._store.session, self._st, root + prefix, include_deleted=True):
            key = entry.file.id[len(root):]
            if key <= after:
                continue
            rows = list(self._store.session.execute(self._st.object_versions, (entry.file.id,),
                                                    execution_profile=self._st.named_rows))
            if shown and shown + len(rows) > limit:
                truncated = True
                break
            for newest, row in zip([True] + [False] * len(rows), rows):
                fields = {"Key": key, "VersionId": str(row.version), "IsLatest": newest,
                          "LastModified": s3_time(row.committed_at), "Owner": owner}
                if row.deleted:
                    markers.append(fields)
                else:
                    versions.append({**fields, "ETag": quoted(row.etag or row.hash.hex()), "Size": row.size,
                                     "StorageClass": "STANDARD"})
            shown += len(rows)
            last, last_version = key, (str(rows[-1].version) if rows else None)
        fields = {"Name": bucket, "Prefix": prefix, "KeyMarker": after, "MaxKeys": limit, "IsTruncated": truncated,
                  "NextKeyMarker": last if truncated else None,
                  # Clients send it back with the key marker (botocore refuses a None); the page ends at a key.
                  "NextVersionIdMarker": last_version if truncated else None, "Version": versions, "DeleteMarker": markers}
        return xml_response(document("ListVersionsResult", fields))

    async def delete_version(self, bucket: str, key: str, text: str) -> Response:
        await self._objects.require_bucket(bucket)
        version = version_id(text)
        deleted = await self._writes.write(lambda lease: self._drop(f"{bucket}/{key}", version, lease))
        headers = {"x-amz-version-id": text, **({"x-amz-delete-marker": "true"} if deleted else {})}
        return Response(status_code=204, headers=headers)

    def _drop(self, file_id: str, version: uuid.UUID, lease: WriterLease) -> bool:
        """Drop one version that is not the current one (as forget drops it); whether it was a delete marker."""
        session, st = self._store.session, self._st
        with self._writes.head_locks.holding(file_id):
            row = session.execute(st.one_version, (file_id, version), execution_profile=st.named_rows).one()
            if row is None:
                return False  # S3 answers 204 for a version that is not there
            head = session.execute(st.head, (file_id,), execution_profile=st.named_rows).one()
            if head.version == version:
                raise S3Error("NotImplemented", "Deleting the current version by versionId is not supported yet; "
                                                "DeleteObject without versionId writes a delete marker.")
            lease.fence(f"dropping a version of {file_id!r}")
            session.execute(st.delete_version_at, (version_micros(version), file_id, version))
            if row.blocks:
                session.execute(st.delete_block_list_at, (int(time.time() * 1_000_000), file_id, version))
            return bool(row.deleted)
