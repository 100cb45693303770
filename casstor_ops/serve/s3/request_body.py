"""The body of a request that is not an object's or a part's data: read within a limit, and checked.

Every such body is XML and small: DeleteObjects' key list, CompleteMultipartUpload's part list, a tagging,
versioning, CORS or ACL configuration, CreateBucket's location. SigV4 signs a header-signed request's body
only through ``x-amz-content-sha256``, so a body that is not checked against it could be changed on the way
(the keys of a DeleteObjects) without the signature noticing. :func:`checked_body` reads the body on the event
loop, never more than ``limit`` bytes, and checks what its headers promise (the signed SHA-256, a
Content-MD5, an ``x-amz-checksum-*``) before any handler parses it; an object's or a part's data is checked
as the store reads it (:class:`~.checksums.Digests` in the store's ``before_commit`` hook), not here.

Example::

    >>> body = await checked_body(request, signed)                  # doctest: +SKIP
    >>> keys = parse(body).iter("Object")                           # doctest: +SKIP

Failures (:class:`~.errors.S3Error`): a body past ``limit``: MalformedXML (read no further); a SHA-256 that
does not match the signed one: XAmzContentSHA256Mismatch; a Content-MD5 or checksum that does not match:
BadDigest; a Content-MD5 that is no MD5: InvalidDigest. A client that stops sending: 408, as any body
(:class:`~casstor_ops.serve.streams.BodyTimeout`).
"""

from __future__ import annotations

import asyncio
import io

from starlette.requests import Request

from casstor_ops.serve.s3.checksums import Digests
from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.sigv4 import Signed
from casstor_ops.serve.status import BodyTooLarge
from casstor_ops.serve.streams import BodyReader

# The largest any of them takes: CompleteMultipartUpload's 10,000 parts and DeleteObjects' 1,000 keys. Each
# handler refuses less as its own limit says.
MAX_REQUEST_BODY = 2 << 20


async def checked_body(request: Request, signed: Signed, limit: int = MAX_REQUEST_BODY, checksums: bool = True
                       ) -> bytes:
    """The request's whole body, once it matched the digests its headers and signature name; ``checksums``
    False: its ``x-amz-checksum-*`` headers are not the body's (CompleteMultipartUpload's name the object's)."""
    reader = BodyReader(request.stream(), asyncio.get_running_loop(), limit=limit)
    try:
        body = await reader.read_all()
    except BodyTooLarge:
        raise S3Error("MalformedXML", "The XML you provided was too large.") from None
    headers = request.headers if checksums else {name: value for name, value in request.headers.items()
                                                 if not name.startswith("x-amz-checksum-")}
    digests = Digests(io.BytesIO(body), headers, signed.payload if len(signed.payload) == 64 else None)
    digests.read()
    digests.check()
    return body
