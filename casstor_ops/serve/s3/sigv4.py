"""AWS Signature Version 4 for S3, server side: the canonical request, the string to sign, the signing key, and
the check of a request signed in its ``Authorization`` header or in its URL (presigned).

Pure: no I/O, the clock is a parameter. :func:`authenticate` returns the
request's :class:`Signed` (who signed it, the payload mode, and what a
chunked body's signatures chain from), or raises the S3 error a client is
owed:

* no ``Authorization`` and no ``X-Amz-Signature``: AccessDenied (no anonymous access);
* an unknown access key: InvalidAccessKeyId; a wrong signature: SignatureDoesNotMatch;
* a header-signed request more than ``MAX_SKEW_S`` from the server's clock:
  RequestTimeTooSkewed; a presigned URL past ``X-Amz-Date + X-Amz-Expires``: AccessDenied;
* a malformed header or scope: AuthorizationHeaderMalformed / AccessDenied;
* ``host``, or an ``x-amz-*`` header (but the few of :data:`UNSIGNED_ALLOWED`), that the signature does not
  cover: AccessDenied with ``HeadersNotSigned``, as S3 answers (an unsigned ``host`` would let a signature made
  for another endpoint be used here). Such headers choose what a request does (``x-amz-copy-source``,
  ``x-amz-metadata-directive``, ``x-amz-tagging``, ``x-amz-meta-*``): one added on the way to a signed request
  would change it without the signature noticing.

:func:`authenticate_form` checks a POST form's policy signature instead
(SigV4's ``x-amz-signature`` or the older ``AWSAccessKeyId`` + ``signature``).

The payload is named by ``x-amz-content-sha256`` (the SHA-256 hex of the
body, checked against it as it is read; ``UNSIGNED-PAYLOAD``; or one of the
``STREAMING-...`` modes of an aws-chunked body: :mod:`.chunked`). A presigned
URL's payload is unsigned unless that header says otherwise.

Example (the S3 documentation's GET with a range)::

    >>> key = signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1", "s3")
    >>> headers = {"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
    ...            "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": "20130524T000000Z"}
    >>> canonical = canonical_request("GET", "/test.txt", [], headers, sorted(headers), EMPTY_SHA256)
    >>> sign(key, string_to_sign("20130524T000000Z", "20130524/us-east-1/s3/aws4_request", canonical))[:16]
    'f0e8bdb87c964420'
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import quote, unquote

from casstor_ops.serve.s3.errors import S3Error, access_denied, signature_mismatch

ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED = "UNSIGNED-PAYLOAD"
STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
STREAMING = {STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER}
MAX_SKEW_S = 15 * 60
MAX_EXPIRES_S = 7 * 24 * 3600
# x-amz-* headers a request may carry unsigned: they frame the body (an aws-chunked one's decoded length and
# trailer) or name its payload's hash, each checked against the body as it is read.
UNSIGNED_ALLOWED = frozenset({"x-amz-content-sha256", "x-amz-decoded-content-length", "x-amz-trailer"})
_SPACES = re.compile(r" +")
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")
# A query already in SigV4's encoding: each pair NAME=VALUE of unreserved characters and upper-case escapes of the
# ASCII bytes SigV4 escapes (not an unreserved one, which it writes plain; not a non-ASCII one, which may not be
# UTF-8 and then decodes to U+FFFD). Such a query needs only its pairs sorted: a presigned URL's, as SDKs write it.
_TOKEN = r"[A-Za-z0-9_.~-]*(?:%(?:[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF])[A-Za-z0-9_.~-]*)*"
_CANONICAL_QUERY = re.compile(f"{_TOKEN}={_TOKEN}(?:&{_TOKEN}={_TOKEN})*")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_AMZ_DATE = re.compile(r"(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z", re.ASCII)  # ISO 8601 basic, as SigV4 signs it


@dataclass(frozen=True)
class Signed:
    """An authenticated request: its access key, payload mode (a SHA-256 hex, ``UNSIGNED-PAYLOAD`` or a
    ``STREAMING-...`` mode), and for a signed aws-chunked body the key, time, scope and seed signature its
    chunks' signatures chain from."""

    access_key: str
    payload: str
    key: bytes = b""
    amz_date: str = ""
    scope: str = ""
    seed: str = ""


def uri_encode(text: str, slash: bool = True) -> str:
    """SigV4's URI encoding: every byte but ``A-Za-z0-9-_.~`` as ``%XX`` (``/`` kept in a path)."""
    return quote(text, safe="-_.~/" if slash else "-_.~")


def canonical_query(raw_query: str, leave_out: str = "") -> str:
    """The query's parameters decoded, encoded again as SigV4 wants, sorted (``leave_out``: X-Amz-Signature)."""
    left_out = uri_encode(leave_out, False)
    if _CANONICAL_QUERY.fullmatch(raw_query):  # no pair to decode and encode again
        pairs = [part.partition("=")[::2] for part in raw_query.split("&")]
    else:
        pairs = [(_encoded(name), _encoded(value)) for name, _, value in
                 (part.partition("=") for part in raw_query.split("&") if raw_query)]
    return "&".join(f"{n}={v}" for n, v in sorted(pairs) if n != left_out)


def _encoded(text: str) -> str:
    """A query's name or value SigV4-encoded: as it came when it has only unreserved characters (most do)."""
    return text if _UNRESERVED.fullmatch(text) else uri_encode(unquote(text), False)


def canonical_request(method: str, path: str, query: Sequence[tuple[str, str]] | str,
                      headers: Mapping[str, str], signed_headers: Sequence[str], payload: str) -> str:
    """The canonical request: ``path`` decoded (encoded here once), ``query`` as pairs or a canonical string,
    ``headers`` by lower-case name (a repeated header's values joined by ``,``)."""
    if not isinstance(query, str):
        query = "&".join(f"{uri_encode(n, False)}={uri_encode(v, False)}" for n, v in sorted(query))
    lines = [f"{name}:{_SPACES.sub(' ', headers.get(name, '').strip())}\n" for name in signed_headers]
    return "\n".join([method, uri_encode(path), query, "".join(lines), ";".join(signed_headers), payload])


def string_to_sign(amz_date: str, scope: str, canonical: str, algorithm: str = ALGORITHM) -> str:
    return "\n".join([algorithm, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])


def chunk_string_to_sign(amz_date: str, scope: str, previous: str, chunk_sha256: str) -> str:
    """What one aws-chunked chunk's signature signs: the previous signature (the seed for the first chunk)."""
    return "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, previous, EMPTY_SHA256, chunk_sha256])


def trailer_string_to_sign(amz_date: str, scope: str, previous: str, trailer: bytes) -> str:
    """What a signed trailer's ``x-amz-trailer-signature`` signs: its header lines, each ending in a newline."""
    return "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz_date, scope, previous, hashlib.sha256(trailer).hexdigest()])


@functools.lru_cache(maxsize=64)  # four HMACs a request otherwise; the key changes once a day per access key
def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = ("AWS4" + secret).encode("utf-8")
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def sign(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


@functools.lru_cache(maxsize=256)  # a presigned URL's X-Amz-Date is the same on each of its uses
def _parse_time(amz_date: str) -> float:
    try:  # not strptime: a tenth of its time, on every request
        return datetime(*map(int, _AMZ_DATE.fullmatch(amz_date).groups()), tzinfo=timezone.utc).timestamp()
    except (AttributeError, ValueError):  # no match; a field out of range
        raise access_denied("X-Amz-Date must be in the ISO8601 basic format (YYYYMMDD'T'HHMMSS'Z')") from None


def _header_fields(authorization: str) -> dict[str, str]:
    algorithm, _, rest = authorization.strip().partition(" ")
    if algorithm != ALGORITHM:
        raise S3Error("AuthorizationHeaderMalformed" if algorithm.startswith("AWS4") else "InvalidRequest",
                      f"the authorization mechanism must be {ALGORITHM}")
    fields = {}
    for part in rest.split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    if not {"Credential", "SignedHeaders", "Signature"} <= fields.keys():
        raise S3Error("AuthorizationHeaderMalformed", "the authorization header is malformed: it needs "
                                                      "Credential, SignedHeaders and Signature")
    return fields


def _scope(credential: str, amz_date: str) -> tuple[str, str, str]:
    """(access key, date, region) of ``AK/DATE/REGION/s3/aws4_request``, its date that of the request."""
    parts = credential.split("/")
    if len(parts) != 5 or parts[3] != "s3" or parts[4] != "aws4_request":
        raise S3Error("AuthorizationHeaderMalformed", f"the credential scope {credential!r} is malformed: "
                                                      f"expected ACCESS_KEY/YYYYMMDD/REGION/s3/aws4_request")
    if parts[1] != amz_date[:8]:
        raise S3Error("AuthorizationHeaderMalformed", f"the credential's date {parts[1]} is not the request's")
    return parts[0], parts[1], parts[2]


def authenticate(method: str, path: str, raw_query: str, headers: Mapping[str, str], secrets: Mapping[str, str],
                 now: float) -> Signed:
    """Check the request's signature (header or presigned URL) against ``secrets`` (access key -> secret key)
    at time ``now``; raise the S3 error the client is owed (see the module docstring). ``path`` is decoded."""
    query = dict(part.partition("=")[::2] for part in raw_query.split("&")) if raw_query else {}
    if "X-Amz-Signature" in query:
        return _presigned(method, path, raw_query, {k: unquote(v) if "%" in v else v for k, v in query.items()},
                          headers, secrets, now)
    authorization = headers.get("authorization")
    if authorization is None:
        raise access_denied("Anonymous access is not allowed: sign the request (AWS Signature Version 4).")
    fields = _header_fields(authorization)
    amz_date = headers.get("x-amz-date", "")
    if not amz_date:
        raise access_denied("AWS authentication requires a valid x-amz-date header")
    when = _parse_time(amz_date)
    if abs(now - when) > MAX_SKEW_S:
        raise S3Error("RequestTimeTooSkewed", "The difference between the request time and the server's time "
                                              "is too large.", RequestTime=amz_date, MaxAllowedSkewMilliseconds=
                      str(MAX_SKEW_S * 1000))
    access_key, date, region = _scope(fields["Credential"], amz_date)
    payload = headers.get("x-amz-content-sha256")
    if payload is None:
        raise S3Error("InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
    if payload != UNSIGNED and payload not in STREAMING and not _HEX64.fullmatch(payload):
        raise S3Error("InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING mode or "
                                         "the SHA-256 hex of the body")
    signed_headers = fields["SignedHeaders"].split(";")
    canonical = canonical_request(method, path, canonical_query(raw_query), headers, signed_headers, payload)
    key = _key(secrets, access_key, date, region)
    scope = f"{date}/{region}/s3/aws4_request"
    expected = sign(key, string_to_sign(amz_date, scope, canonical))
    if not hmac.compare_digest(expected, fields["Signature"]):
        raise signature_mismatch()
    _require_signed(headers, signed_headers)
    return Signed(access_key, payload, key, amz_date, scope, expected)


def _key(secrets: Mapping[str, str], access_key: str, date: str, region: str) -> bytes:
    return signing_key(_secret(secrets, access_key), date, region, "s3")


def _secret(secrets: Mapping[str, str], access_key: str) -> str:
    secret = secrets.get(access_key)
    if secret is None:
        raise S3Error("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
    return secret


def _presigned(method: str, path: str, raw_query: str, query: Mapping[str, str], headers: Mapping[str, str],
               secrets: Mapping[str, str], now: float) -> Signed:
    if query.get("X-Amz-Algorithm") != ALGORITHM:
        raise access_denied(f"X-Amz-Algorithm must be {ALGORITHM}")
    amz_date = query.get("X-Amz-Date", "")
    when = _parse_time(amz_date)
    try:
        expires = int(query.get("X-Amz-Expires", ""))
    except ValueError:
        raise access_denied("X-Amz-Expires must be a number of seconds") from None
    if not 0 <= expires <= MAX_EXPIRES_S:
        raise access_denied(f"X-Amz-Expires must be between 0 and {MAX_EXPIRES_S} seconds")
    if now > when + expires:
        raise access_denied("Request has expired")
    if when - now > MAX_SKEW_S:
        raise access_denied("Request is not valid yet")
    access_key, date, region = _scope(query.get("X-Amz-Credential", ""), amz_date)
    payload = headers.get("x-amz-content-sha256", UNSIGNED)
    signed_headers = query.get("X-Amz-SignedHeaders", "host").split(";")
    canonical = canonical_request(method, path, canonical_query(raw_query, "X-Amz-Signature"), headers,
                                  signed_headers, payload)
    scope = f"{date}/{region}/s3/aws4_request"
    expected = sign(_key(secrets, access_key, date, region), string_to_sign(amz_date, scope, canonical))
    if not hmac.compare_digest(expected, query["X-Amz-Signature"]):
        raise signature_mismatch()
    _require_signed(headers, signed_headers)
    return Signed(access_key, payload)


def _require_signed(headers: Mapping[str, str], signed_headers: Sequence[str]) -> None:
    """AccessDenied if ``headers`` (lower-case names) hold ``host`` or an ``x-amz-*`` header ``signed_headers``
    leave out."""
    signed = set(signed_headers)
    unsigned = sorted(name for name in headers if name not in signed and (
        name == "host" or name.startswith("x-amz-") and name not in UNSIGNED_ALLOWED))
    if unsigned:
        raise S3Error("AccessDenied", "There were headers present in the request which were not signed",
                      HeadersNotSigned=", ".join(unsigned))


def authenticate_form(fields: Mapping[str, str], secrets: Mapping[str, str]) -> str:
    """The access key that signed a POST form's ``policy`` (``fields`` by lower-case name): SigV4's
    ``x-amz-signature`` (the hex HMAC-SHA256 of the base64 policy under ``x-amz-credential``'s signing key), or
    the older ``AWSAccessKeyId`` and ``signature`` (the base64 HMAC-SHA1 of it under the secret key). The policy's
    own expiration bounds its use, so no clock skew is checked. A signing field missing: InvalidArgument; an
    unknown key: InvalidAccessKeyId; a wrong signature: SignatureDoesNotMatch."""
    policy = fields["policy"]
    if "x-amz-credential" in fields or "x-amz-signature" in fields:
        _require(fields, "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature")
        if fields["x-amz-algorithm"] != ALGORITHM:
            raise S3Error("InvalidArgument", f"x-amz-algorithm must be {ALGORITHM}")
        amz_date = fields["x-amz-date"]
        _parse_time(amz_date)
        access_key, date, region = _scope(fields["x-amz-credential"], amz_date)
        expected, given = sign(_key(secrets, access_key, date, region), policy), fields["x-amz-signature"]
    else:
        _require(fields, "awsaccesskeyid", "signature")
        access_key = fields["awsaccesskeyid"]
        secret = _secret(secrets, access_key)
        digest = hmac.new(secret.encode("utf-8"), policy.encode("utf-8"), hashlib.sha1).digest()
        expected, given = base64.b64encode(digest).decode(), fields["signature"]
    if not hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace")):
        raise signature_mismatch()
    return access_key


def _require(fields: Mapping[str, str], *names: str) -> None:
    for name in names:
        if name not in fields:
            raise S3Error("InvalidArgument", f"Bucket POST must contain a field named '{name}'. If it is "
                                             f"specified, please check the order of the fields.")
