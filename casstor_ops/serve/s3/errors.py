"""S3's error documents: :class:`S3Error`, its code and HTTP status, as the XML body every S3 client parses.

Each refusal of the S3 face is raised as an :class:`S3Error` (or one of
the named constructors below) and answered by :func:`error_response`; a
store error that is not one (a 503 of the store, a bug) is mapped from its
:mod:`casstor_ops.serve.status` status to the S3 code a client retries on
(``SlowDown``, ``ServiceUnavailable``, ``InternalError``).

Example::

    >>> err = S3Error("NoSuchKey", "The specified key does not exist.", resource="/b/k")
    >>> err.status
    404
    >>> b"<Code>NoSuchKey</Code>" in render(err, "req-1")
    True

Failures: an unknown code is a programming error (KeyError at raise time).
"""

from __future__ import annotations

from casstor_ops.serve.s3.xml import document

STATUS = {
    "AccessDenied": 403, "AuthorizationHeaderMalformed": 400, "BadDigest": 400, "BucketAlreadyExists": 409,
    "BucketAlreadyOwnedByYou": 409, "BucketNotEmpty": 409, "EntityTooLarge": 400, "EntityTooSmall": 400, "IncompleteBody": 400,
    "InternalError": 500, "InvalidAccessKeyId": 403, "InvalidArgument": 400, "InvalidBucketName": 400,
    "InvalidDigest": 400, "InvalidPart": 400, "InvalidPartOrder": 400, "InvalidRange": 416, "InvalidRequest": 400, "InvalidTag": 400, "KeyTooLongError": 400,
    "MalformedACLError": 400,
    "MalformedXML": 400, "MethodNotAllowed": 405, "MissingContentLength": 411, "MissingSecurityHeader": 400,
    "NoSuchBucket": 404, "NoSuchKey": 404, "NoSuchTagSet": 404, "NoSuchUpload": 404, "NoSuchVersion": 404, "NotImplemented": 501, "NotModified": 304,
    "PreconditionFailed": 412, "RequestTimeTooSkewed": 403, "RequestTimeout": 400, "ServiceUnavailable": 503,
    "SignatureDoesNotMatch": 403, "SlowDown": 503, "XAmzContentSHA256Mismatch": 400,
    # POST Object (.post_object) and CORS (.cors)
    "AccessForbidden": 403, "BadRequest": 400, "InvalidPolicyDocument": 400, "MalformedPOSTRequest": 400,
    "MaxPostPreDataLengthExceededError": 400, "NoSuchCORSConfiguration": 404,
}


class S3Error(Exception):
    """One S3 refusal: ``code`` (S3's name for it), a one-line ``message``, the ``resource`` it concerns."""

    def __init__(self, code: str, message: str, resource: str = "", **extra: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = STATUS[code]
        self.message = message
        self.resource = resource
        self.extra = extra
        self.headers: dict[str, str] = {}  # sent with the error (x-amz-delete-marker)


def render(err: S3Error, request_id: str) -> bytes:
    """The XML error document of ``err``."""
    fields = {"Code": err.code, "Message": err.message, **err.extra}
    if err.resource:
        fields["Resource"] = err.resource
    fields["RequestId"] = request_id
    return document("Error", fields, namespace=False)


def no_such_bucket(bucket: str) -> S3Error:
    return S3Error("NoSuchBucket", "The specified bucket does not exist.", f"/{bucket}", BucketName=bucket)


def no_such_key(bucket: str, key: str) -> S3Error:
    return S3Error("NoSuchKey", "The specified key does not exist.", f"/{bucket}/{key}", Key=key)


def access_denied(message: str = "Access Denied.") -> S3Error:
    return S3Error("AccessDenied", message)


def signature_mismatch() -> S3Error:
    return S3Error("SignatureDoesNotMatch", "The request signature we calculated does not match the signature "
                                            "you provided. Check your key and signing method.")


def precondition_failed(header: str) -> S3Error:
    return S3Error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold",
                   Condition=header)


def invalid_argument(message: str) -> S3Error:
    return S3Error("InvalidArgument", message)
