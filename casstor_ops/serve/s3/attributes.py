"""S3 GetObjectAttributes (``GET /b/k?attributes``): an object's ETag, checksum, parts, storage class and size.

The attributes asked for are named in ``x-amz-object-attributes`` (``ETag``,
``Checksum``, ``ObjectParts``, ``StorageClass``, ``ObjectSize``); each is
answered from the version row (one head read, and one read of the part list
for ObjectParts): the parts a multipart object was completed from, with
their sizes and checksums, paged by ``x-amz-max-parts`` (default 1000) from
``x-amz-part-number-marker``. An object of one PUT has no ObjectParts, an
object stored without a checksum no Checksum.

Example::

    >>> sorted(wanted_attributes("ETag, ObjectSize"))
    ['ETag', 'ObjectSize']

Failures (:class:`~.errors.S3Error`): no or an unknown attribute, a bad
max-parts or marker: InvalidArgument; the object's own errors (NoSuchKey,
NoSuchVersion, NoSuchBucket).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.s3.errors import invalid_argument
from casstor_ops.serve.s3.objects import Objects, S3Object, xml_response
from casstor_ops.serve.s3.xml import document

ATTRIBUTES = {"ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"}
MAX_PARTS_SHOWN = 1000


def wanted_attributes(header: str | None) -> set[str]:
    """The attributes an ``x-amz-object-attributes`` header names; InvalidArgument for none or an unknown one."""
    wanted = {name.strip() for name in (header or "").split(",") if name.strip()}
    if not wanted or not wanted <= ATTRIBUTES:
        raise invalid_argument(f"x-amz-object-attributes must name some of {', '.join(sorted(ATTRIBUTES))}")
    return wanted


def _number(header: str | None, default: int) -> int:
    try:
        number = int(header) if header is not None else default
    except ValueError:
        number = -1
    if number < 0:
        raise invalid_argument("x-amz-max-parts and x-amz-part-number-marker must be whole numbers")
    return number


def object_parts(obj: S3Object, parts: list[tuple[int, str | None]], limit: int, marker: int) -> dict:
    """The ObjectParts element: the parts after ``marker``, at most ``limit`` of them."""
    shown = list(enumerate(parts, start=1))[marker:marker + limit]
    name = f"Checksum{obj.checksum.algorithm.upper()}" if obj.checksum else None
    return {"PartsCount": len(parts), "PartNumberMarker": marker,
            "NextPartNumberMarker": shown[-1][0] if shown else marker, "MaxParts": limit,
            "IsTruncated": marker + limit < len(parts),
            "Part": [{"PartNumber": number, "Size": size, **({name: value} if name and value else {})}
                     for number, (size, value) in shown]}


async def get_attributes(objects: Objects, request: Request, bucket: str, key: str, version: str | None
                         ) -> Response:
    """GetObjectAttributes of the object's head, or of its version ``version``."""
    wanted = wanted_attributes(request.headers.get("x-amz-object-attributes"))
    limit = _number(request.headers.get("x-amz-max-parts"), MAX_PARTS_SHOWN)
    marker = _number(request.headers.get("x-amz-part-number-marker"), 0)
    obj = await objects.head(bucket, key, version)
    parts = await on_pool(objects.reads.pool, objects.parts, obj.info) if "ObjectParts" in wanted else None
    fields = {"ETag": obj.etag.strip('"') if "ETag" in wanted else None,
              "Checksum": obj.checksum.fields() if obj.checksum and "Checksum" in wanted else None,
              "ObjectParts": object_parts(obj, parts, limit, marker) if parts else None,
              "StorageClass": "STANDARD" if "StorageClass" in wanted else None,
              "ObjectSize": obj.info.size if "ObjectSize" in wanted else None}
    response = xml_response(document("GetObjectAttributesResponse", fields))
    response.headers["last-modified"] = obj.headers()["last-modified"]
    if version is not None or await objects.versioning(bucket) is not None:  # S3: none in a bucket never versioned
        response.headers["x-amz-version-id"] = obj.version_id
    return response
