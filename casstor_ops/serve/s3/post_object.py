"""POST Object: a browser form's upload to ``POST /bucket``, allowed by a policy that a user's key signed.

The form (:mod:`.form`) carries the object's ``key`` (``${filename}``
stands for the file's name), ``Content-Type``, ``x-amz-meta-*``,
``x-amz-checksum-*``, ``success_action_status`` or
``success_action_redirect``, the base64 JSON ``policy`` and its signature
(:func:`~.sigv4.authenticate_form`: SigV4 or the older
``AWSAccessKeyId``/``signature``), then the ``file``. The policy
(:class:`PostPolicy`) has an ``expiration`` and ``conditions``: ``{"field":
"value"}`` and ``["eq", "$field", "value"]`` (equal), ``["starts-with",
"$field", "prefix"]``, ``["content-length-range", min, max]``; condition
and field names are case-insensitive, ``bucket`` is the URL's. Every field
must be named by a condition but the signature's, ``file``, ``x-ignore-*``
and ``x-amz-checksum-*`` (a checksum only narrows what is stored). A form
without a policy is anonymous, and refused: casstor has no public bucket.

The file is streamed to the store through PutObject's write path
(:meth:`Objects.store_body <.objects.Objects.store_body>`: the key's lock, the
digests checked before the head write), never held; a file longer than the
policy's range is refused as soon as its bytes pass the maximum, one shorter
before the head write, so neither commits anything. ``acl`` and
``tagging`` are accepted (they must be in the policy) and not kept.

Example (the fields a browser sends; ``boto3``'s ``generate_presigned_post`` makes them)::

    key=photos/${filename}  x-amz-algorithm=AWS4-HMAC-SHA256  x-amz-credential=AK/20261126/us-east-1/s3/aws4_request
    x-amz-date=20261126T120000Z  policy=eyJleHBpcmF0aW9uIjog...  x-amz-signature=5a3e...  file=<the bytes>

Answers: 204 with the ETag and Location (``success_action_status`` 200:
200; 201: 201 and a ``PostResponse`` document); ``success_action_redirect``:
303 to it with ``bucket``, ``key`` and ``etag`` added to its query.

Failures (:class:`~.errors.S3Error`): no policy: AccessDenied; a signing
field or the key missing: InvalidArgument; a policy that is not base64 JSON
with a valid ``expiration`` and ``conditions`` list: InvalidPolicyDocument;
an unknown key or a wrong signature: InvalidAccessKeyId,
SignatureDoesNotMatch; an expired policy, a condition not met or a field no
condition names: AccessDenied (403); the file outside the length range:
EntityTooLarge or EntityTooSmall; a checksum that does not match: BadDigest.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response

from casstor_ops.serve.policy import Policy
from casstor_ops.serve.s3.checksums import Digests
from casstor_ops.serve.s3.errors import S3Error, access_denied
from casstor_ops.serve.s3.form import FIELDS_LIMIT, FilePart, boundary_of, parse_head
from casstor_ops.serve.s3.objects import MAX_PUT_BYTES, Objects, S3Object, quoted, user_meta, xml_response
from casstor_ops.serve.s3.sigv4 import authenticate_form
from casstor_ops.serve.s3.xml import document
from casstor_ops.serve.streams import BodyReader
from casstor_ops.serve.writes import Writes
from casstor_ops.store.api import FileInfo
from casstor_ops.store.ids import check_id

# Fields no condition needs to name: the signature's own, the file, and those S3 says to ignore.
_UNCONDITIONED = {"policy", "signature", "awsaccesskeyid", "x-amz-signature", "file"}
_EXPIRATION_FORMATS = ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ")


def is_form_post(method: str, path: str, content_type: str | None) -> bool:
    """A POST Object request: a POST of a form to a bucket (no key)."""
    bucket, _, key = path.lstrip("/").partition("/")
    return (method == "POST" and bool(bucket) and not key
            and (content_type or "").lower().startswith("multipart/form-data"))


def invalid_policy(message: str) -> S3Error:
    return S3Error("InvalidPolicyDocument", f"Invalid Policy: {message}")


@dataclass(frozen=True)
class PostPolicy:
    """A POST policy: when it expires (epoch seconds), its conditions ``(op, field, value)`` with ``op`` ``eq``
    or ``starts-with`` and ``field`` in lower case, and the file's length range."""

    expires: float
    conditions: tuple[tuple[str, str, str], ...]
    least: int = 0
    most: int | None = None

    @classmethod
    def parse(cls, encoded: str) -> PostPolicy:
        """The policy of a form's ``policy`` field; InvalidPolicyDocument for one S3 would refuse."""
        try:
            parsed = json.loads(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            raise invalid_policy("the policy is not base64-encoded JSON") from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("expiration"), str):
            raise invalid_policy("Policy missing expiration")
        if not isinstance(parsed.get("conditions"), list):
            raise invalid_policy("Policy missing conditions")
        conditions, least, most = [], 0, None
        for condition in parsed["conditions"]:
            if isinstance(condition, list) and condition and str(condition[0]).lower() == "content-length-range":
                low, high = _length_range(condition)
                least, most = max(least, low), high if most is None else min(most, high)
            else:
                conditions.append(_condition(condition))
        return cls(_expiration(parsed["expiration"]), tuple(conditions), least, most)

    def check(self, fields: Mapping[str, str], bucket: str, now: float) -> None:
        """AccessDenied unless the policy holds at ``now`` for ``fields`` (the key's ``${filename}`` replaced)
        posted to ``bucket``."""
        if now >= self.expires:
            raise access_denied("Invalid according to Policy: Policy expired.")
        values = {**fields, "bucket": bucket}
        for operator, name, wanted in self.conditions:
            given = values.get(name, "")
            if not (given == wanted if operator == "eq" else given.startswith(wanted)):
                raise access_denied(f'Invalid according to Policy: Policy Condition failed: ["{operator}", '
                                    f'"${name}", "{wanted}"]')
        named = {name for _, name, _ in self.conditions}
        for name in fields:
            if name not in named and name not in _UNCONDITIONED and not name.startswith(("x-ignore-",
                                                                                       "x-amz-checksum-")):
                raise access_denied(f"Invalid according to Policy: Extra input fields: {name}")

    def check_length(self, size: int) -> None:
        if size < self.least:
            raise S3Error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
        if self.most is not None and size > self.most:
            raise S3Error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")


def _expiration(text: str) -> float:
    for layout in _EXPIRATION_FORMATS:
        try:
            return datetime.strptime(text, layout).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            pass
    raise invalid_policy(f"Invalid 'expiration' value: '{text}' (ISO 8601 UTC, as 2026-12-01T12:00:00.000Z)")


def _condition(condition: object) -> tuple[str, str, str]:
    """``(op, field, value)`` of ``{"field": "value"}`` or ``[op, "$field", "value"]``."""
    if isinstance(condition, dict) and len(condition) == 1:
        (name, value), = condition.items()
        if isinstance(value, str):
            return "eq", name.lower(), value
    elif (isinstance(condition, list) and len(condition) == 3 and all(isinstance(c, str) for c in condition)
          and condition[0].lower() in ("eq", "starts-with") and condition[1].startswith("$")):
        return condition[0].lower(), condition[1][1:].lower(), condition[2]
    raise invalid_policy(f"Invalid condition {json.dumps(condition)}")


def _length_range(condition: list) -> tuple[int, int]:
    if len(condition) == 3:
        try:
            least, most = int(condition[1]), int(condition[2])
        except (TypeError, ValueError):
            least, most = -1, -1
        if 0 <= least <= most:
            return least, most
    raise invalid_policy(f"Invalid content-length-range {json.dumps(condition)}: two lengths, 0 <= min <= max")


class PostObjects:
    """POST Object for one server (see the module docstring)."""

    def __init__(self, objects: Objects, writes: Writes, policy: Policy, secrets: Mapping[str, str]) -> None:
        self._objects = objects
        self._writes = writes
        self._policy = policy
        self._secrets = secrets

    async def post(self, request: Request, bucket: str) -> Response:
        boundary = boundary_of(request.headers.get("content-type", ""))
        reader = BodyReader(request.stream(), asyncio.get_running_loop(), limit=self._policy.max_body,
                            deadline_s=self._policy.body_timeout_s)
        ended = await reader.read_ahead(FIELDS_LIMIT)
        head = parse_head(reader.held(), boundary, ended)
        fields = head.fields
        if "policy" not in fields:
            raise access_denied("Anonymous access is not allowed: a POST needs a signed policy.")
        access_key = authenticate_form(fields, self._secrets)
        policy = PostPolicy.parse(fields["policy"])
        if "key" not in fields:
            raise S3Error("InvalidArgument", "Bucket POST must contain a field named 'key'. If it is specified, "
                                             "please check the order of the fields.")
        key = fields["key"].replace("${filename}", head.filename)
        fields = {**fields, "key": key}
        policy.check(fields, bucket, time.time())
        await self._objects.require_bucket(bucket, access_key)  # the form's signer must own the bucket
        file_id = check_id(f"{bucket}/{key}", storing=True)
        most = MAX_PUT_BYTES if policy.most is None else min(policy.most, MAX_PUT_BYTES)
        body = Digests(FilePart(reader, boundary, head.offset, most), fields)
        meta = S3Object(FileInfo(file_id, None, 0, b"", 0, None), None, fields.get("content-type"),
                        user_meta(fields))
        await self._writes.write(partial(self._objects.store_body, body, file_id, None, meta,
                                         check_source=lambda: policy.check_length(body.size)))
        return _answer(request, fields, bucket, key, quoted(body.etag))


def _answer(request: Request, fields: Mapping[str, str], bucket: str, key: str, etag: str) -> Response:
    """S3's answer to a stored POST: the redirect, else the status the form asked for (204 by default)."""
    redirect = fields.get("success_action_redirect") or fields.get("redirect")
    if redirect:
        query = urlencode({"bucket": bucket, "key": key, "etag": etag})
        return Response(status_code=303, headers={"location": f"{redirect}{'&' if '?' in redirect else '?'}{query}"})
    location = f"{str(request.base_url).rstrip('/')}/{quote(bucket)}/{quote(key)}"
    status = fields.get("success_action_status")
    if status == "201":
        result = {"Location": location, "Bucket": bucket, "Key": key, "ETag": etag}
        return xml_response(document("PostResponse", result, namespace=False), 201)
    return Response(status_code=200 if status == "200" else 204, headers={"etag": etag, "location": location})
