"""Access control lists, owner-only: every bucket and object is its owner's alone, and its ACL says just that.

GetBucketAcl and GetObjectAcl answer the owner's FULL_CONTROL grant (the
owner: the user whose request :meth:`~.buckets.Buckets.authorize` let in, so
the bucket's). PutBucketAcl and PutObjectAcl accept an ACL that changes
nothing: the canned ACL ``private`` (``x-amz-acl``), or a policy whose every
grant is the owner's FULL_CONTROL. Anything else (a public canned ACL, a grant
to another user or group, ``x-amz-grant-*``) is NotImplemented (501): sharing
is not supported, and a 200 would let the client believe an object public (or
shared) that stays private. Anonymous requests stay refused whatever an ACL
says (:mod:`.sigv4`). An ``x-amz-acl`` sent *with* a write (CreateBucket,
PutObject, CopyObject, CreateMultipartUpload) is not checked: clients and
browser forms send one with every write, and the object is private anyway.

Example::

    $ aws s3api get-bucket-acl --bucket photos      # Owner AKIAME, one grant: AKIAME FULL_CONTROL
    $ aws s3api put-object-acl --bucket photos --key a.jpg --acl private        # 200, nothing changes
    $ aws s3api put-object-acl --bucket photos --key a.jpg --acl public-read    # NotImplemented

Failures (:class:`~.errors.S3Error`): the object's NoSuchKey/NoSuchVersion;
a body that is not an AccessControlPolicy: MalformedACLError; any ACL but
the owner's: NotImplemented.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import Response

from casstor_ops.serve.s3.buckets import owner_of
from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.objects import Objects, xml_response
from casstor_ops.serve.s3.xml import document, parse

MAX_ACL_BODY = 64 * 1024
XSI = "http://www.w3.org/2001/XMLSchema-instance"


def policy(owner: str) -> bytes:
    """The AccessControlPolicy of everything ``owner`` owns: their FULL_CONTROL."""
    grantee = {"@xmlns:xsi": XSI, "@xsi:type": "CanonicalUser", **owner_of(owner)}
    return document("AccessControlPolicy", {"Owner": owner_of(owner), "AccessControlList": {
        "Grant": {"Grantee": grantee, "Permission": "FULL_CONTROL"}}})


def check_owner_only(headers: Mapping[str, str], body: bytes, owner: str) -> None:
    """NotImplemented unless the ACL a PutBucketAcl/PutObjectAcl sets (canned, ``x-amz-grant-*`` or the body's
    policy) is the owner's FULL_CONTROL alone; MalformedACLError for a body that is not a policy."""
    canned = headers.get("x-amz-acl")
    if any(name.startswith("x-amz-grant-") for name in headers) or canned not in (None, "private"):
        raise not_shared()
    if canned is not None or not body:
        return
    try:
        grants = [(grant.findtext("Grantee/ID"), grant.findtext("Permission"))
                  for grant in parse(body[:MAX_ACL_BODY]).iter("Grant")]
    except (ValueError, SyntaxError):
        raise S3Error("MalformedACLError", "The XML you provided was not well-formed or did not validate "
                                           "against our published schema.") from None
    if any(grant != (owner, "FULL_CONTROL") for grant in grants):
        raise not_shared()


def not_shared() -> S3Error:
    return S3Error("NotImplemented", "Only the owner's FULL_CONTROL ACL (private) is supported: buckets and "
                                     "objects cannot be shared or made public.")


class Acls:
    """The ACL operations of one server (see the module docstring)."""

    def __init__(self, objects: Objects) -> None:
        self._objects = objects

    async def answer(self, request: Request, bucket: str, key: str, owner: str, version: str | None = None,
                     body: bytes = b"") -> Response:
        """Get/PutBucketAcl (``key`` empty) or Get/PutObjectAcl of a bucket ``owner`` owns; ``body``: a PUT's,
        checked (:mod:`.request_body`)."""
        if key:
            await self._objects.head(bucket, key, version)
        if request.method == "GET":
            return xml_response(policy(owner))
        if request.method != "PUT":
            raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")
        check_owner_only(request.headers, body, owner)
        return Response(status_code=200)
