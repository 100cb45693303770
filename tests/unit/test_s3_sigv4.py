"""SigV4 and aws-chunked, checked against the test vectors the S3 documentation publishes (the examples of
"Signature Calculations for the Authorization Header" and "Query Parameters", credentials AKIAIOSFODNN7EXAMPLE,
2013-05-24), plus the refusals: skew, expiry, wrong key, tampered chunk, anonymous."""

from __future__ import annotations

import base64
import io
import random
import zlib
from datetime import datetime, timezone
from urllib.parse import unquote

import pytest

from casstor_ops.serve.s3 import sigv4
from casstor_ops.serve.s3.checksums import Digests
from casstor_ops.serve.s3.chunked import AwsChunked
from casstor_ops.serve.s3.errors import S3Error

KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SECRETS = {KEY: SECRET}
WHEN = datetime(2013, 5, 24, tzinfo=timezone.utc).timestamp()
SCOPE = "20130524/us-east-1/s3/aws4_request"


def _auth(signed_headers: str, signature: str) -> str:
    return f"AWS4-HMAC-SHA256 Credential={KEY}/{SCOPE},SignedHeaders={signed_headers},Signature={signature}"


def _get_range_headers(signature: str) -> dict[str, str]:
    return {"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
            "x-amz-content-sha256": sigv4.EMPTY_SHA256, "x-amz-date": "20130524T000000Z",
            "authorization": _auth("host;range;x-amz-content-sha256;x-amz-date", signature)}


GET_RANGE_SIG = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"


def test_the_documented_get_object_signature_is_accepted():
    signed = sigv4.authenticate("GET", "/test.txt", "", _get_range_headers(GET_RANGE_SIG), SECRETS, WHEN + 60)
    assert signed.access_key == KEY and signed.payload == sigv4.EMPTY_SHA256


def test_the_documented_put_object_signature():
    """PUT /test$file.text with x-amz-storage-class and a body "Welcome to Amazon S3." (the documented example)."""
    payload = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
    headers = {"host": "examplebucket.s3.amazonaws.com", "date": "Fri, 24 May 2013 00:00:00 GMT",
               "x-amz-date": "20130524T000000Z", "x-amz-storage-class": "REDUCED_REDUNDANCY",
               "x-amz-content-sha256": payload,
               "authorization": _auth("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                                      "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")}
    assert sigv4.authenticate("PUT", "/test$file.text", "", headers, SECRETS, WHEN).payload == payload


def test_the_documented_list_objects_signature_with_a_query():
    headers = {"host": "examplebucket.s3.amazonaws.com", "x-amz-date": "20130524T000000Z",
               "x-amz-content-sha256": sigv4.EMPTY_SHA256,
               "authorization": _auth("host;x-amz-content-sha256;x-amz-date",
                                      "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")}
    sigv4.authenticate("GET", "/", "max-keys=2&prefix=J", headers, SECRETS, WHEN)


def test_a_wrong_signature_a_wrong_key_and_no_signature_are_refused():
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", "", _get_range_headers("0" * 64), SECRETS, WHEN)
    assert err.value.code == "SignatureDoesNotMatch" and err.value.status == 403
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", "", _get_range_headers(GET_RANGE_SIG), {"other": SECRET}, WHEN)
    assert err.value.code == "InvalidAccessKeyId"
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", "", {"host": "h"}, SECRETS, WHEN)
    assert err.value.code == "AccessDenied"


def test_an_x_amz_header_the_signature_leaves_out_is_refused():
    """A documented signed request, then the same with an x-amz header added after signing (a copy source, a
    metadata directive: they would change what the request does): AccessDenied naming them, as S3 answers. The
    same for a presigned URL; an unsigned x-amz-content-sha256 (a payload's hash, checked against the body) and an
    x-amzn-trace-id (not an x-amz-* header) pass."""
    added = {"x-amz-copy-source": "other/secret", "x-amz-metadata-directive": "REPLACE"}
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", "", {**_get_range_headers(GET_RANGE_SIG), **added}, SECRETS, WHEN)
    assert (err.value.code, err.value.status) == ("AccessDenied", 403)
    assert err.value.extra == {"HeadersNotSigned": "x-amz-copy-source, x-amz-metadata-directive"}
    presigned = {"host": "examplebucket.s3.amazonaws.com", "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
                 "x-amzn-trace-id": "Root=1"}
    sigv4.authenticate("GET", "/test.txt", PRESIGNED, presigned, SECRETS, WHEN)
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", PRESIGNED, {**presigned, "x-amz-tagging": "a=1"}, SECRETS, WHEN)
    assert err.value.extra == {"HeadersNotSigned": "x-amz-tagging"}


def test_a_signature_that_leaves_out_the_host_is_refused():
    """A request signed correctly but without ``host`` in SignedHeaders (a signature that would hold for any
    endpoint): AccessDenied naming ``host``, as S3 answers."""
    headers = {"host": "examplebucket.s3.amazonaws.com", "x-amz-content-sha256": sigv4.EMPTY_SHA256,
               "x-amz-date": "20130524T000000Z"}
    signed_headers = ["x-amz-content-sha256", "x-amz-date"]
    canonical = sigv4.canonical_request("GET", "/test.txt", "", headers, signed_headers, sigv4.EMPTY_SHA256)
    key = sigv4.signing_key(SECRET, "20130524", "us-east-1", "s3")
    signature = sigv4.sign(key, sigv4.string_to_sign("20130524T000000Z", SCOPE, canonical))
    headers["authorization"] = _auth(";".join(signed_headers), signature)
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", "", headers, SECRETS, WHEN)
    assert (err.value.code, err.value.extra) == ("AccessDenied", {"HeadersNotSigned": "host"})


def test_a_clock_skew_over_15_minutes_is_refused():
    headers = _get_range_headers(GET_RANGE_SIG)
    sigv4.authenticate("GET", "/test.txt", "", headers, SECRETS, WHEN + 15 * 60)
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", "", headers, SECRETS, WHEN + 15 * 60 + 1)
    assert err.value.code == "RequestTimeTooSkewed" and err.value.status == 403


PRESIGNED = ("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3"
             "%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
             "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")


def test_the_documented_presigned_url_is_accepted_until_it_expires():
    headers = {"host": "examplebucket.s3.amazonaws.com"}
    signed = sigv4.authenticate("GET", "/test.txt", PRESIGNED, headers, SECRETS, WHEN + 86400)
    assert signed.payload == "UNSIGNED-PAYLOAD"
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/test.txt", PRESIGNED, headers, SECRETS, WHEN + 86401)
    assert err.value.code == "AccessDenied" and "expired" in err.value.message
    with pytest.raises(S3Error) as err:
        sigv4.authenticate("GET", "/other.txt", PRESIGNED, headers, SECRETS, WHEN)
    assert err.value.code == "SignatureDoesNotMatch"


def _reference_canonical_query(raw_query: str, leave_out: str) -> str:
    """SigV4's canonical query by its definition: each pair decoded, encoded again, sorted."""
    pairs = [(sigv4.uri_encode(unquote(n), False), sigv4.uri_encode(unquote(v), False))
             for n, _, v in (part.partition("=") for part in raw_query.split("&"))] if raw_query else []
    return "&".join(f"{n}={v}" for n, v in sorted(pairs) if n != leave_out)


def test_the_canonical_query_of_an_already_canonical_query_is_that_of_its_definition():
    """Generates 20,000 queries of unreserved and reserved characters, escapes upper- and lower-case, of
    unreserved, reserved and non-ASCII bytes (some not UTF-8), pairs without ``=`` or with two, unsorted and
    repeated names: canonical_query (whose fast path takes a query already canonical as it came) equals the
    per-pair definition on each, and the fast path is taken for a presigned URL's query as SDKs write it."""
    rng = random.Random(30)
    pieces = ["a", "Z", "9", "-", "_", ".", "~", "X-Amz-Signature", "%2F", "%3A", "%2f", "%41", "%7E", "%20",
              "%C3%A9", "%FF", "%", "%2", "+", " ", "/", "=", "&", "é", "*", "%00", "%7F", "%3D", "%26"]
    for _ in range(20000):
        raw = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        assert sigv4.canonical_query(raw, "X-Amz-Signature") == \
            _reference_canonical_query(raw, "X-Amz-Signature"), raw
    assert sigv4._CANONICAL_QUERY.fullmatch(PRESIGNED)
    assert sigv4.canonical_query(PRESIGNED, "X-Amz-Signature") == \
        _reference_canonical_query(PRESIGNED, "X-Amz-Signature")


CHUNK_HEADERS = {"host": "s3.amazonaws.com", "x-amz-date": "20130524T000000Z",
                 "x-amz-storage-class": "REDUCED_REDUNDANCY", "x-amz-content-sha256": sigv4.STREAMING_SIGNED,
                 "content-encoding": "aws-chunked", "x-amz-decoded-content-length": "66560",
                 "content-length": "66824",
                 "authorization": _auth("content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
                                        "x-amz-decoded-content-length;x-amz-storage-class",
                                        "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")}
CHUNK_SIGS = ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
              "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
              "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"]


def _chunked_body(sizes=(65536, 1024, 0), sigs=CHUNK_SIGS) -> bytes:
    return b"".join(f"{size:x};chunk-signature={sig}\r\n".encode() + b"a" * size + b"\r\n"
                    for size, sig in zip(sizes, sigs))


def test_the_documented_chunked_upload_decodes_with_every_chunk_signature_checked():
    body = _chunked_body()
    assert len(body) == 66824
    signed = sigv4.authenticate("PUT", "/examplebucket/chunkObject.txt", "", CHUNK_HEADERS, SECRETS, WHEN)
    assert AwsChunked(io.BytesIO(body), signed).read() == b"a" * 66560


def test_a_tampered_chunk_is_refused():
    signed = sigv4.authenticate("PUT", "/examplebucket/chunkObject.txt", "", CHUNK_HEADERS, SECRETS, WHEN)
    body = bytearray(_chunked_body())
    body[2000] = ord("b")
    with pytest.raises(S3Error) as err:
        AwsChunked(io.BytesIO(bytes(body)), signed).read()
    assert err.value.code == "SignatureDoesNotMatch"


def test_an_unsigned_trailer_checksum_is_checked():
    data = b"hello world" * 1000
    good = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    headers = {"x-amz-trailer": "x-amz-checksum-crc32"}
    for value, ok in ((good, True), ("AAAAAA==", False)):
        body = f"{len(data):x}\r\n".encode() + data + f"\r\n0\r\nx-amz-checksum-crc32:{value}\r\n\r\n".encode()
        chunks = AwsChunked(io.BytesIO(body), sigv4.Signed("AK", sigv4.STREAMING_UNSIGNED_TRAILER))
        digests = Digests(chunks, headers, trailer=lambda: chunks.trailer)
        assert digests.read() == data
        if ok:
            digests.check()
        else:
            with pytest.raises(S3Error, match="CRC32"):
                digests.check()


def test_crc32c_and_md5_and_sha256_mismatches():
    data = b"123456789"
    crc32c = base64.b64encode((0xE3069283).to_bytes(4, "big")).decode()  # CRC-32C's check value
    Digests(io.BytesIO(data), {"x-amz-checksum-crc32c": crc32c}).read()
    digests = Digests(io.BytesIO(data), {"x-amz-checksum-crc32c": crc32c})
    digests.read()
    digests.check()
    digests = Digests(io.BytesIO(data), {"content-md5": base64.b64encode(b"x" * 16).decode()})
    digests.read()
    with pytest.raises(S3Error, match="Content-MD5"):
        digests.check()
    digests = Digests(io.BytesIO(data), {}, payload_sha256="0" * 64)
    digests.read()
    with pytest.raises(S3Error) as err:
        digests.check()
    assert err.value.code == "XAmzContentSHA256Mismatch"
