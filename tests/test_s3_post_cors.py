"""POST Object (a browser form signed by a policy) and bucket CORS, through a real ``casstor serve --s3`` process:
the forms are boto3's ``generate_presigned_post`` (SigV4) sent as a browser would (urllib3's multipart encoder,
unsigned), the preflights plain unsigned OPTIONS requests, every stored file read back byte-exact."""

from __future__ import annotations

import base64
import hashlib
import os
import xml.etree.ElementTree as ET

import pytest
import urllib3
from botocore.exceptions import ClientError

from .s3_support import error_code

HTTP = urllib3.PoolManager(retries=False)


def _post(s3, bucket: str, fields: dict[str, str], data: bytes,
          filename: str = "upload.bin") -> urllib3.BaseHTTPResponse:
    """POST the form ``fields`` then the file, unsigned, as a browser does."""
    body, content_type = urllib3.encode_multipart_formdata([*fields.items(), ("file", (filename, data))])
    return HTTP.request("POST", f"{s3.meta.endpoint_url}/{bucket}", body=body,
                        headers={"Content-Type": content_type}, redirect=False)


def _code(response: urllib3.BaseHTTPResponse) -> str:
    return ET.fromstring(response.data).findtext("Code")


def _missing(s3, bucket: str, key: str) -> bool:
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket=bucket, Key=key)
    return err.value.response["Error"]["Code"] in ("404", "NoSuchKey")


def test_a_form_post_signed_by_a_presigned_policy_stores_the_file_byte_exact_with_its_fields(s3):
    s3.create_bucket(Bucket="forms")
    data = os.urandom(9 << 20)  # several MiB: streamed through the store's chunker, not one inline row
    post = s3.generate_presigned_post("forms", "in/${filename}", Fields={"Content-Type": "image/png",
                                                                          "x-amz-meta-who": "browser"},
                                      Conditions=[{"Content-Type": "image/png"}, {"x-amz-meta-who": "browser"},
                                                  ["content-length-range", 1, 10 << 20]])
    answer = _post(s3, "forms", post["fields"], data, "photo.png")
    assert answer.status == 204, answer.data
    assert answer.headers["etag"] == f'"{hashlib.md5(data).hexdigest()}"'
    assert answer.headers["location"].endswith("/forms/in/photo.png")
    got = s3.get_object(Bucket="forms", Key="in/photo.png")
    assert got["Body"].read() == data and got["ContentType"] == "image/png" and got["Metadata"] == {"who": "browser"}
    # success_action_status 201: S3's PostResponse document; a checksum field is checked against the bytes.
    post = s3.generate_presigned_post("forms", "small.txt", Fields={"success_action_status": "201"},
                                      Conditions=[{"success_action_status": "201"}])
    small = b"small file"
    checksum = base64.b64encode(hashlib.sha256(small).digest()).decode()
    answer = _post(s3, "forms", {**post["fields"], "x-amz-checksum-sha256": checksum}, small)
    assert answer.status == 201 and ET.fromstring(answer.data).findtext("Key") == "small.txt"
    assert s3.get_object(Bucket="forms", Key="small.txt")["Body"].read() == small
    # success_action_redirect: 303 to it, the stored object named in its query.
    redirect = "https://site.test/done?x=1"
    post = s3.generate_presigned_post("forms", "a b.txt", Fields={"success_action_redirect": redirect},
                                      Conditions=[{"success_action_redirect": redirect}])
    answer = _post(s3, "forms", post["fields"], small)
    assert answer.status == 303
    etag = hashlib.md5(small).hexdigest()
    assert answer.headers["location"] == f"{redirect}&bucket=forms&key=a+b.txt&etag=%22{etag}%22"


def test_a_form_post_the_policy_does_not_allow_stores_nothing(s3):
    """Each refused form sends a file; none may be stored: over the policy's content-length-range (refused as the
    bytes pass the maximum), under it (refused before the head write), a key outside the policy's prefix, a
    field no condition names, a wrong checksum, a tampered signature, and a form with no policy at all."""
    s3.create_bucket(Bucket="forms-refused")
    ranged = s3.generate_presigned_post("forms-refused", "r.bin", Conditions=[["content-length-range", 10, 1 << 20]])
    prefixed = s3.generate_presigned_post("forms-refused", "${filename}", Conditions=[["starts-with", "$key", "ok/"]])
    cases = [
        (ranged["fields"], os.urandom(3 << 20), "EntityTooLarge", 400),
        (ranged["fields"], b"tiny", "EntityTooSmall", 400),
        ({**prefixed["fields"], "key": "other/${filename}"}, b"data", "AccessDenied", 403),
        ({**ranged["fields"], "x-amz-meta-extra": "1"}, b"0123456789ab", "AccessDenied", 403),
        ({**ranged["fields"], "x-amz-checksum-sha256": base64.b64encode(b"\0" * 32).decode()}, b"0123456789ab",
         "BadDigest", 400),
        ({**ranged["fields"], "x-amz-signature": "0" * 64}, b"0123456789ab", "SignatureDoesNotMatch", 403),
        ({"key": "r.bin"}, b"0123456789ab", "AccessDenied", 403),
    ]
    for fields, data, code, status in cases:
        answer = _post(s3, "forms-refused", fields, data, "r.bin")
        assert (answer.status, _code(answer)) == (status, code), (code, answer.data)
        assert _missing(s3, "forms-refused", "r.bin") and _missing(s3, "forms-refused", "other/r.bin")
    assert s3.list_objects_v2(Bucket="forms-refused")["KeyCount"] == 0


def test_cors_rules_answer_the_preflight_and_mark_answers_to_their_origins(s3):
    s3.create_bucket(Bucket="cors-site")
    s3.put_object(Bucket="cors-site", Key="page.html", Body=b"<p>hi</p>")
    with pytest.raises(ClientError) as err:
        s3.get_bucket_cors(Bucket="cors-site")
    assert error_code(err) == "NoSuchCORSConfiguration"
    rule = {"AllowedOrigins": ["https://*.example.com"], "AllowedMethods": ["GET", "PUT"],
            "AllowedHeaders": ["x-amz-*", "content-type"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600}
    s3.put_bucket_cors(Bucket="cors-site", CORSConfiguration={"CORSRules": [rule]})
    assert s3.get_bucket_cors(Bucket="cors-site")["CORSRules"] == [rule]
    url = f"{s3.meta.endpoint_url}/cors-site/page.html"

    def preflight(origin: str | None, method: str | None, requested: str = "") -> urllib3.BaseHTTPResponse:
        headers = {name: value for name, value in (("Origin", origin), ("Access-Control-Request-Method", method),
                                                   ("Access-Control-Request-Headers", requested)) if value}
        return HTTP.request("OPTIONS", url, headers=headers)

    allowed = preflight("https://app.example.com", "PUT", "x-amz-date, Content-Type")
    assert allowed.status == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example.com"
    assert allowed.headers["access-control-allow-methods"] == "GET, PUT"
    assert allowed.headers["access-control-allow-headers"] == "x-amz-date, content-type"
    assert allowed.headers["access-control-max-age"] == "600"
    for origin, method, requested, status in (("https://evil.test", "GET", "", 403),
                                              ("https://app.example.com", "DELETE", "", 403),
                                              ("https://app.example.com", "GET", "authorization", 403),
                                              (None, "GET", "", 400), ("https://app.example.com", None, "", 400)):
        answer = preflight(origin, method, requested)
        assert answer.status == status and "access-control-allow-origin" not in answer.headers
    # An actual (signed) request from an allowed origin is answered with the rule's headers, an error's too.
    for key, status in (("page.html", 200), ("missing.html", 404)):
        signed = s3.generate_presigned_url("get_object", Params={"Bucket": "cors-site", "Key": key})
        answer = HTTP.request("GET", signed, headers={"Origin": "https://app.example.com"})
        assert answer.status == status
        assert answer.headers["access-control-allow-origin"] == "https://app.example.com"
        assert answer.headers["access-control-expose-headers"] == "ETag"
        other = HTTP.request("GET", signed, headers={"Origin": "https://evil.test"})
        assert "access-control-allow-origin" not in other.headers
    s3.delete_bucket_cors(Bucket="cors-site")
    with pytest.raises(ClientError) as err:
        s3.get_bucket_cors(Bucket="cors-site")
    assert error_code(err) == "NoSuchCORSConfiguration"
    assert preflight("https://app.example.com", "GET").status == 403
    with pytest.raises(ClientError) as err:
        s3.put_bucket_cors(Bucket="no-such-bucket-cors", CORSConfiguration={"CORSRules": [rule]})
    assert error_code(err) == "NoSuchBucket"


def test_a_form_signed_by_another_user_than_the_buckets_owner_stores_nothing(s3, s3_alt):
    """Injects: a form policy signed by the alt user's key, posted to the main user's bucket (an owner's bucket
    is refused to every other user's signed request). Checks: AccessDenied 403 and no object stored; the owner's
    own form to it is stored."""
    s3.create_bucket(Bucket="forms-owned")
    post = s3_alt.generate_presigned_post("forms-owned", "stolen.txt")
    answer = _post(s3, "forms-owned", post["fields"], b"not yours")
    assert answer.status == 403 and _code(answer) == "AccessDenied", answer.data
    assert _missing(s3, "forms-owned", "stolen.txt")
    post = s3.generate_presigned_post("forms-owned", "mine.txt")
    assert _post(s3, "forms-owned", post["fields"], b"mine").status == 204
    assert s3.get_object(Bucket="forms-owned", Key="mine.txt")["Body"].read() == b"mine"
