"""S3 versioning on the store's history: Put/GetBucketVersioning, ListObjectVersions, DeleteObject of a version.

Every store keeps an object's versions as rows of ``versions`` (its
history: a PUT adds one, a DELETE adds a delete marker); a bucket's
versioning state (``buckets.versioning``) decides what forget keeps: an
Enabled bucket gets a retention policy that keeps every version
(:meth:`~.buckets.Buckets.set_versioning`), so each stays readable by its
``versionId``: the version's timeuuid as text, or ``null`` for a version
written while versioning was not Enabled (:mod:`.version_rows`). GetObject
and HeadObject take ``versionId`` (:meth:`~.objects.Objects.head`) and answer
``x-amz-version-id``. ListObjectVersions reads the bucket's entries under the
prefix from the directory index (removed objects' entries included) and each
one's versions S3 shows, newest first, delete markers as ``DeleteMarker``,
max-keys of them a page; a page may end inside a key and the next goes on
from its ``key-marker`` and ``version-id-marker``.
DeleteObject with ``versionId`` drops that version for good (its row, then
its block list, as forget does); dropping the current one makes the previous
one current (:func:`~.version_rows.drop`).

Example::

    >>> await versions.list(bucket="photos", query={"prefix": "2024/"})   # doctest: +SKIP

Failures (:class:`~.errors.S3Error`): a malformed configuration:
MalformedXML; a malformed versionId (or version-id-marker): NoSuchVersion;
a version-id-marker without a key-marker: InvalidArgument.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import partial

from starlette.responses import Response

from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.s3.buckets import Buckets, owner_of
from casstor_ops.serve.s3.checksums import Checksum
from casstor_ops.serve.s3.errors import S3Error, invalid_argument
from casstor_ops.serve.s3.listing import max_keys
from casstor_ops.serve.s3.objects import Objects, quoted, s3_time, xml_response
from casstor_ops.serve.s3.version_rows import NULL, name, version_id, visible
from casstor_ops.serve.s3.xml import document, parse
from casstor_ops.serve.writes import Writes
from casstor_ops.store.api import Store
from casstor_ops.store.blocks.block_list import file_hash_of
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.namespace.listing import entries_under

MAX_CONFIG_BODY = 64 * 1024


def _after_version(rows: list, marker: str) -> list:
    """Of a key's rows (newest first), those after the version ``marker`` names: a page that ended inside the key
    goes on there. A version dropped since (not among ``rows``) goes on from the versions older than it; a
    ``null`` one, whose time the marker does not tell, from all of them: a version listed twice is better than
    one never listed (a client emptying the bucket would leave it behind)."""
    for n, row in enumerate(rows):
        if name(row) == marker:
            return rows[n + 1:]
    if marker == NULL:
        return rows
    older_than = version_id(marker).time
    return [row for row in rows if row.version.time < older_than]


class Versions:
    """The versioning operations of one server (see the module docstring)."""

    def __init__(self, store: Store, objects: Objects, buckets: Buckets, writes: Writes) -> None:
        self._store = store
        self._st = Statements.for_session(store.session)
        self._objects = objects
        self._buckets = buckets
        self._writes = writes

    async def put_config(self, bucket: str, body: bytes) -> Response:
        """PutBucketVersioning of ``body`` (checked: :mod:`.request_body`)."""
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
        versioning = await self._objects.versioning(bucket)
        return await on_pool(self._objects.reads.pool, self._list, bucket, query, versioning, owner_of(owner))

    def _list(self, bucket: str, query: dict[str, str], versioning: str | None, owner: dict[str, str]) -> Response:
        prefix, after, limit = query.get("prefix", ""), query.get("key-marker", ""), max_keys(query.get("max-keys"))
        version_marker = query.get("version-id-marker") or None
        if version_marker is not None and not after:
            raise invalid_argument("A version-id marker cannot be specified without a key marker.")
        root = bucket + "/"
        versions, markers, shown, truncated, last, last_version = [], [], 0, False, "", None
        for key, every in self._keys_with_rows(root, prefix, after, limit + 1, version_marker is not None):
            rows = visible(every, versioning)
            if key == after and version_marker is not None:  # the key the last page ended in
                rows = _after_version(rows, version_marker)
            for row in rows:
                if shown == limit:
                    truncated = True
                    break
                fields = {"Key": key, "VersionId": name(row), "IsLatest": row.version == every[0].version,
                          "LastModified": s3_time(row.committed_at), "Owner": owner}
                if row.deleted:
                    markers.append(fields)
                else:
                    checksum = Checksum.parse(row.checksum)
                    versions.append({**fields, "ETag": quoted(row.etag or file_hash_of(row).hex()),
                                     **(checksum.listed_fields() if checksum else {}), "Size": row.size,
                                     "StorageClass": "STANDARD"})
                shown += 1
                last, last_version = key, name(row)
            if truncated:
                break
        fields = {"Name": bucket, "Prefix": prefix, "KeyMarker": after, "VersionIdMarker": version_marker,
                  "MaxKeys": limit, "IsTruncated": truncated, "NextKeyMarker": last if truncated else None,
                  "NextVersionIdMarker": last_version if truncated else None, "Version": versions,
                  "DeleteMarker": markers}
        return xml_response(document("ListVersionsResult", fields))

    def _keys_with_rows(self, root: str, prefix: str, after: str, at_once: int,
                        from_after: bool = False) -> Iterator[tuple[str, list]]:
        """Each key under ``prefix`` after ``after`` (``from_after``: ``after`` too; removed ones too), with its
        version rows, newest first: the
        rows of ``at_once`` keys read together (one key after the other, a page of 1,000 keys waited for 1,000 reads
        in turn). A page shows at most max-keys keys, so max-keys + 1 keys read together read one page's at once, and
        reads the rows of at most max-keys keys for nothing when the page ends early (keys of many versions)."""
        entries = (entry for entry in entries_under(self._store.session, self._st, root + prefix,
                                                    include_deleted=True)
                   if entry.file.id[len(root):] > after or (from_after and entry.file.id[len(root):] == after))
        while group := list(itertools.islice(entries, at_once)):
            ids = [entry.file.id for entry in group]
            yield from ((file_id[len(root):], rows) for file_id, rows in zip(ids, self._objects.rows_of(ids)))

    async def delete_version(self, bucket: str, key: str, text: str) -> Response:
        await self._objects.require_bucket(bucket)
        deleted = await self._writes.write(partial(self._objects.drop_version, f"{bucket}/{key}", text))
        headers = {"x-amz-version-id": text, **({"x-amz-delete-marker": "true"} if deleted else {})}
        return Response(status_code=204, headers=headers)
