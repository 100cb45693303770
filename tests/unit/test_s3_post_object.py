"""POST Object's pure parts, no node: the form body parsed and its file streamed (boundaries split across reads),
the policy document read and checked as S3 does, and the form's signature (V2 and SigV4, the latter made by
boto3's own ``generate_presigned_post``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import time

import boto3
import pytest
from botocore.client import Config

from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.form import FilePart, boundary_of, parse_head
from casstor_ops.serve.s3.post_object import PostPolicy, is_form_post
from casstor_ops.serve.s3.sigv4 import authenticate_form

KEY, SECRET = "AKIAPOST", "post-secret"
BOUNDARY = b"b0undary"


def _form(fields: list[tuple[str, str]], file: bytes, filename: str = "a.txt") -> bytes:
    parts = [b'--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (BOUNDARY, n.encode(), v.encode())
             for n, v in fields]
    parts.append(b'--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n'
                 b"Content-Type: application/octet-stream\r\n\r\n%s\r\n--%s--\r\n"
                 % (BOUNDARY, filename.encode(), file, BOUNDARY))
    return b"".join(parts)


class Trickle(io.RawIOBase):
    """A source that gives at most ``step`` bytes a read, so every boundary is split somewhere."""

    def __init__(self, data: bytes, step: int) -> None:
        super().__init__()
        self._data, self._step = memoryview(data), step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        count = min(len(buffer), self._step, len(self._data))
        buffer[:count] = self._data[:count]
        self._data = self._data[count:]
        return count


def _policy(conditions: list, expires: float | None = None, **extra) -> str:
    when = time.gmtime(expires if expires is not None else time.time() + 600)
    document = {"expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ", when), "conditions": conditions, **extra}
    return base64.b64encode(json.dumps(document).encode()).decode()


def test_fields_are_read_case_insensitively_and_the_file_streams_to_its_closing_boundary_across_any_split():
    file = b"x\r\n-" * 1000 + b"\r\n--b0undar" + bytes(range(256)) * 40  # near-boundaries inside the file
    body = _form([("Key", "k/${filename}"), ("Content-Type", "text/plain"), ("x-amz-meta-Who", "me")], file)
    head = parse_head(body, BOUNDARY, ended=True)
    assert head.fields == {"key": "k/${filename}", "content-type": "text/plain", "x-amz-meta-who": "me"}
    assert head.filename == "a.txt"
    for step in (1, 7, 13, 64, 4096, len(body)):
        part = FilePart(Trickle(body, step), BOUNDARY, head.offset)
        assert part.read() == file and part.size == len(file)


def test_a_file_longer_than_allowed_is_refused_while_it_is_read():
    body = _form([("key", "k")], b"y" * 10_000)
    part = FilePart(Trickle(body, 1000), BOUNDARY, parse_head(body, BOUNDARY, True).offset, most=4000)
    with pytest.raises(S3Error) as err:
        part.read()
    assert err.value.code == "EntityTooLarge" and part.size <= 5000


def test_malformed_forms_are_refused():
    body = _form([("key", "k")], b"data")
    with pytest.raises(S3Error) as err:
        FilePart(io.BytesIO(body[:-20]), BOUNDARY, parse_head(body, BOUNDARY, True).offset).read()
    assert err.value.code == "MalformedPOSTRequest"
    no_file = b'--%s\r\nContent-Disposition: form-data; name="key"\r\n\r\nk\r\n--%s--\r\n' % (BOUNDARY, BOUNDARY)
    cut = body[:body.index(b'name="file"')]
    for head, ended, code in ((no_file, True, "MalformedPOSTRequest"), (cut, True, "MalformedPOSTRequest"),
                              (cut, False, "MaxPostPreDataLengthExceededError"),
                              (_form([("key", "a"), ("KEY", "b")], b""), True, "MalformedPOSTRequest")):
        with pytest.raises(S3Error) as err:
            parse_head(head, BOUNDARY, ended)
        assert err.value.code == code
    assert boundary_of('multipart/form-data; boundary="a b"') == b"a b"
    with pytest.raises(S3Error):
        boundary_of("multipart/form-data")
    assert is_form_post("POST", "/b", "multipart/form-data; boundary=x")
    assert not is_form_post("POST", "/b/k", "multipart/form-data; boundary=x")
    assert not is_form_post("POST", "/b", "application/xml")


def test_the_policy_conditions_are_checked_as_s3_does():
    policy = PostPolicy.parse(_policy([{"bUcKeT": "b"}, ["StArTs-WiTh", "$KeY", "foo"], {"acl": "private"},
                                       ["eq", "$x-amz-meta-a", "1"], ["content-length-range", 2, 10],
                                       ["content-length-range", 0, 8]]))
    assert (policy.least, policy.most) == (2, 8)
    fields = {"key": "foo.txt", "acl": "private", "x-amz-meta-a": "1", "policy": "p", "signature": "s",
              "awsaccesskeyid": "a", "x-ignore-me": "z", "x-amz-checksum-sha256": "c"}
    policy.check(fields, "b", time.time())
    refusals = [({**fields, "key": "bar"}, "b"), (fields, "other"), ({**fields, "x-amz-meta-a": "2"}, "b"),
                ({**fields, "x-amz-meta-b": "2"}, "b"), ({k: v for k, v in fields.items() if k != "acl"}, "b")]
    for wrong, bucket in refusals:
        with pytest.raises(S3Error) as err:
            policy.check(wrong, bucket, time.time())
        assert err.value.code == "AccessDenied"
    with pytest.raises(S3Error) as err:
        policy.check(fields, "b", policy.expires)
    assert "expired" in err.value.message
    for size, code in ((1, "EntityTooSmall"), (9, "EntityTooLarge")):
        with pytest.raises(S3Error) as err:
            policy.check_length(size)
        assert err.value.code == code


@pytest.mark.parametrize("encoded", [
    "not base64!", base64.b64encode(b"[1]").decode(), _policy([{}]), _policy([["content-length-range", 0]]),
    _policy([["content-length-range", -1, 0]]), _policy([["content-length-range", 5, 1]]),
    _policy([["in", "$key", "a"]]), _policy([["eq", "key", "a"]]),
    base64.b64encode(json.dumps({"conditions": []}).encode()).decode(),
    base64.b64encode(json.dumps({"expiration": "2030-01-01 00:00:00+00:00", "conditions": []}).encode()).decode(),
    base64.b64encode(json.dumps({"EXPIRATION": "2030-01-01T00:00:00Z", "conditions": []}).encode()).decode(),
    base64.b64encode(json.dumps({"expiration": "2030-01-01T00:00:00.000Z", "CONDITIONS": []}).encode()).decode(),
])
def test_a_policy_s3_would_refuse_is_invalid(encoded: str):
    with pytest.raises(S3Error) as err:
        PostPolicy.parse(encoded)
    assert err.value.code == "InvalidPolicyDocument" and err.value.status == 400


def test_the_v2_form_signature():
    policy = _policy([])
    signature = base64.b64encode(hmac.new(SECRET.encode(), policy.encode(), hashlib.sha1).digest()).decode()
    fields = {"policy": policy, "awsaccesskeyid": KEY, "signature": signature}
    assert authenticate_form(fields, {KEY: SECRET}) == KEY
    for wrong, code in (({**fields, "signature": signature[::-1]}, "SignatureDoesNotMatch"),
                        ({**fields, "awsaccesskeyid": "nobody"}, "InvalidAccessKeyId"),
                        ({"policy": policy, "awsaccesskeyid": KEY}, "InvalidArgument")):
        with pytest.raises(S3Error) as err:
            authenticate_form(wrong, {KEY: SECRET})
        assert err.value.code == code


def test_boto3s_sigv4_presigned_post_is_accepted_and_its_policy_holds():
    client = boto3.client("s3", region_name="eu-west-1", endpoint_url="http://127.0.0.1:1",
                          aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          config=Config(signature_version="s3v4"))
    post = client.generate_presigned_post("bkt", "up/${filename}", Fields={"Content-Type": "text/plain"},
                                          Conditions=[{"Content-Type": "text/plain"},
                                                      ["content-length-range", 1, 100]])
    fields = {name.lower(): value for name, value in post["fields"].items()}
    assert "x-amz-credential" in fields
    assert authenticate_form(fields, {KEY: SECRET}) == KEY
    policy = PostPolicy.parse(fields["policy"])
    policy.check({**fields, "key": "up/a.txt"}, "bkt", time.time())
    with pytest.raises(S3Error) as err:
        authenticate_form({**fields, "x-amz-signature": "0" * 64}, {KEY: SECRET})
    assert err.value.code == "SignatureDoesNotMatch"
