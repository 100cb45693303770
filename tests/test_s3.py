"""``casstor serve --s3`` driven by real S3 clients against a real server process and the test node.

The clients: boto3 with its default request checksums (CRC32 on every
PutObject), and the aws CLI (``aws s3 cp``, ``ls``, ``sync``, ``aws s3api
head-object``; ``make setup`` installs it in a venv of its own, since it pins
another botocore than s3fs). Every round trip is compared
byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import os
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.client import Config
from botocore.exceptions import ClientError

from .s3_support import AWS, KEY, aws, error_code

def test_buckets_are_created_listed_and_deleted_only_when_empty(s3):
    s3.create_bucket(Bucket="bkt-life")
    assert "bkt-life" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.head_bucket(Bucket="bkt-life")
    s3.create_bucket(Bucket="bkt-life")  # its owner's second create: 200, as in us-east-1
    s3.put_object(Bucket="bkt-life", Key="a/b.txt", Body=b"x")
    with pytest.raises(ClientError) as err:
        s3.delete_bucket(Bucket="bkt-life")
    assert error_code(err) == "BucketNotEmpty"
    s3.delete_object(Bucket="bkt-life", Key="a/b.txt")
    s3.delete_bucket(Bucket="bkt-life")
    with pytest.raises(ClientError) as err:
        s3.head_bucket(Bucket="bkt-life")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(ClientError) as err:
        s3.create_bucket(Bucket="Bad_Name")
    assert error_code(err) == "InvalidBucketName"


def test_put_get_head_delete_byte_exact_with_metadata(s3):
    s3.create_bucket(Bucket="objects")
    for size in (0, 5, 70_000, 3 * 1024 * 1024 + 17):
        body = os.urandom(size)
        put = s3.put_object(Bucket="objects", Key=f"dir/f{size} é.bin", Body=body, ContentType="image/png",
                            Metadata={"colour": "blue"})
        assert put["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
        got = s3.get_object(Bucket="objects", Key=f"dir/f{size} é.bin")
        assert got["Body"].read() == body
        assert got["ContentType"] == "image/png" and got["Metadata"] == {"colour": "blue"}
        head = s3.head_object(Bucket="objects", Key=f"dir/f{size} é.bin")
        assert head["ContentLength"] == size and head["ETag"] == put["ETag"]
    s3.delete_object(Bucket="objects", Key="dir/f5 é.bin")
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="objects", Key="dir/f5 é.bin")
    assert error_code(err) == "NoSuchKey"
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="no-such-bucket", Key="x")
    assert error_code(err) == "NoSuchBucket"


def test_range_and_conditional_gets(s3):
    s3.create_bucket(Bucket="ranges")
    body = os.urandom(2 * 1024 * 1024)
    etag = s3.put_object(Bucket="ranges", Key="r", Body=body)["ETag"]
    assert s3.get_object(Bucket="ranges", Key="r", Range="bytes=10-99")["Body"].read() == body[10:100]
    assert s3.get_object(Bucket="ranges", Key="r", Range="bytes=-5")["Body"].read() == body[-5:]
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="ranges", Key="r", Range=f"bytes={len(body)}-")
    assert error_code(err) == "InvalidRange"
    assert s3.get_object(Bucket="ranges", Key="r", IfMatch=etag)["Body"].read() == body
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="ranges", Key="r", IfMatch='"0000"')
    assert error_code(err) == "PreconditionFailed"
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="ranges", Key="r", IfNoneMatch=etag)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    modified = s3.head_object(Bucket="ranges", Key="r")["LastModified"]
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="ranges", Key="r", IfModifiedSince=modified)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="ranges", Key="r", IfUnmodifiedSince=modified.replace(year=2000))
    assert error_code(err) == "PreconditionFailed"


def test_list_objects_v2_with_delimiter_and_pagination_and_v1(s3):
    s3.create_bucket(Bucket="listing")
    keys = sorted([f"a/{i:02d}" for i in range(7)] + ["a/sub/x", "b", "c/d/e", "top"])
    for key in keys:
        s3.put_object(Bucket="listing", Key=key, Body=key.encode())
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="listing", PaginationConfig={"PageSize": 3}):
        found += [o["Key"] for o in page.get("Contents", [])]
    assert found == keys
    top = s3.list_objects_v2(Bucket="listing", Delimiter="/")
    assert [o["Key"] for o in top["Contents"]] == ["b", "top"]
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["a/", "c/"]
    inner = s3.list_objects_v2(Bucket="listing", Prefix="a/", Delimiter="/", MaxKeys=4)
    assert [o["Key"] for o in inner["Contents"]] == ["a/00", "a/01", "a/02", "a/03"] and inner["IsTruncated"]
    rest = s3.list_objects_v2(Bucket="listing", Prefix="a/", Delimiter="/",
                              ContinuationToken=inner["NextContinuationToken"])
    assert [o["Key"] for o in rest["Contents"]] == ["a/04", "a/05", "a/06"]
    assert [p["Prefix"] for p in rest["CommonPrefixes"]] == ["a/sub/"]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="listing", StartAfter="a/06")["Contents"]] == keys[7:]
    etag = s3.list_objects_v2(Bucket="listing", Prefix="b")["Contents"][0]["ETag"]
    assert etag == f'"{hashlib.md5(b"b").hexdigest()}"'
    v1 = s3.list_objects(Bucket="listing", Marker="a/sub/x")
    assert [o["Key"] for o in v1["Contents"]] == ["b", "c/d/e", "top"]


def test_copy_writes_no_block_and_keeps_or_replaces_metadata(s3, cql):
    s3.create_bucket(Bucket="copies")
    body = os.urandom(3 * 1024 * 1024)
    etag = s3.put_object(Bucket="copies", Key="src", Body=body, Metadata={"k": "v"})["ETag"]
    blocks = cql.execute("SELECT COUNT(*) FROM casstor_data.existing_blocks").one()[0]
    copied = s3.copy_object(Bucket="copies", Key="dst", CopySource={"Bucket": "copies", "Key": "src"})
    assert copied["CopyObjectResult"]["ETag"] == etag
    assert cql.execute("SELECT COUNT(*) FROM casstor_data.existing_blocks").one()[0] == blocks
    got = s3.get_object(Bucket="copies", Key="dst")
    assert got["Body"].read() == body and got["Metadata"] == {"k": "v"}
    s3.copy_object(Bucket="copies", Key="dst2", CopySource="copies/src", MetadataDirective="REPLACE",
                   Metadata={"new": "1"}, ContentType="text/plain")
    head = s3.head_object(Bucket="copies", Key="dst2")
    assert head["Metadata"] == {"new": "1"} and head["ContentType"] == "text/plain"


def test_delete_objects(s3):
    s3.create_bucket(Bucket="bulk-delete")
    for key in ("x1", "x2", "x3"):
        s3.put_object(Bucket="bulk-delete", Key=key, Body=b"1")
    result = s3.delete_objects(Bucket="bulk-delete", Delete={"Objects": [{"Key": "x1"}, {"Key": "x2"},
                                                                         {"Key": "missing"}]})
    assert sorted(d["Key"] for d in result["Deleted"]) == ["missing", "x1", "x2"]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="bulk-delete")["Contents"]] == ["x3"]


def test_delete_objects_of_many_keys_answers_each_key_once_in_its_order(s3):
    """DeleteObjects deletes several keys at a time: 300 keys, one of them twice and a missing one, each get one
    entry, in the request's order, and no error; no key is left."""
    s3.create_bucket(Bucket="bulk-many")
    keys = [f"k/{n:03d}" for n in range(300)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda key: s3.put_object(Bucket="bulk-many", Key=key, Body=key.encode()), keys))
    asked = keys + ["k/000", "k/missing"]
    result = s3.delete_objects(Bucket="bulk-many", Delete={"Objects": [{"Key": key} for key in asked]})
    assert [d["Key"] for d in result["Deleted"]] == asked and "Errors" not in result
    assert "Contents" not in s3.list_objects_v2(Bucket="bulk-many")


def test_presigned_get_and_refusals(s3, server):
    s3.create_bucket(Bucket="presigned")
    s3.put_object(Bucket="presigned", Key="p.txt", Body=b"presigned body")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "presigned", "Key": "p.txt"}, ExpiresIn=60)
    assert urllib.request.urlopen(url).read() == b"presigned body"
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url.replace("p.txt", "q.txt"))
    assert err.value.code == 403 and b"SignatureDoesNotMatch" in err.value.read()
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"http://{server.host}:{server.port}/presigned/p.txt")
    assert err.value.code == 403 and b"<Code>AccessDenied</Code>" in err.value.read()
    wrong = boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://{server.host}:{server.port}",
                                    aws_access_key_id=KEY, aws_secret_access_key="wrong",
                                    config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                                 retries={"max_attempts": 1}))
    with pytest.raises(ClientError) as err:
        wrong.get_object(Bucket="presigned", Key="p.txt")
    assert error_code(err) == "SignatureDoesNotMatch"


def test_a_wrong_content_md5_or_checksum_stores_nothing(s3):
    s3.create_bucket(Bucket="digests")
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket="digests", Key="bad", Body=b"abc", ContentMD5="XUFAKrxLKna5cZ2REBfFkg==")
    assert error_code(err) == "BadDigest"
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket="digests", Key="bad", Body=b"abc", ChecksumCRC32="AAAAAA==")
    assert error_code(err) == "BadDigest"
    with pytest.raises(ClientError):
        s3.head_object(Bucket="digests", Key="bad")


def _tamper_after_signing(s3, old: bytes, new: bytes):
    """Make ``s3`` replace ``old`` by ``new`` (as long) in its next request bodies after signing them: what a
    party on the way could do. Returns the handler, to unregister."""
    def tamper(request, **_) -> None:
        if isinstance(request.body, bytes) and old in request.body:
            request.body = request.body.replace(old, new)
    assert len(old) == len(new)
    s3.meta.events.register_first("before-send.s3", tamper)
    return tamper


def test_a_small_body_changed_after_signing_is_refused_and_changes_nothing(s3):
    # What it injects: boto3 signs DeleteObjects and PutObjectTagging (x-amz-content-sha256: the body's SHA-256),
    # then a before-send hook changes a key or a tag in the body, as long as it was. What it checks: the server
    # answers XAmzContentSHA256Mismatch and deletes or tags nothing (before, these bodies were parsed unchecked:
    # the object named only by the changed body was deleted).
    s3.create_bucket(Bucket="tampered")
    for key in ("keep-a", "keep-b"):
        s3.put_object(Bucket="tampered", Key=key, Body=key.encode())
    s3.put_object_tagging(Bucket="tampered", Key="keep-a", Tagging={"TagSet": [{"Key": "k", "Value": "old"}]})
    tamper = _tamper_after_signing(s3, b"keep-a", b"keep-b")
    try:
        with pytest.raises(ClientError) as err:
            s3.delete_objects(Bucket="tampered", Delete={"Objects": [{"Key": "keep-a"}]})
        assert error_code(err) == "XAmzContentSHA256Mismatch"
    finally:
        s3.meta.events.unregister("before-send.s3", tamper)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="tampered")["Contents"]] == ["keep-a", "keep-b"]
    tamper = _tamper_after_signing(s3, b"<Value>new</Value>", b"<Value>bad</Value>")
    try:
        with pytest.raises(ClientError) as err:
            s3.put_object_tagging(Bucket="tampered", Key="keep-a", Tagging={"TagSet": [{"Key": "k", "Value": "new"}]})
        assert error_code(err) == "XAmzContentSHA256Mismatch"
    finally:
        s3.meta.events.unregister("before-send.s3", tamper)
    assert s3.get_object_tagging(Bucket="tampered", Key="keep-a")["TagSet"] == [{"Key": "k", "Value": "old"}]
    with pytest.raises(ClientError) as err:  # a Content-MD5 of other bytes
        s3.put_object_tagging(Bucket="tampered", Key="keep-a", Tagging={"TagSet": [{"Key": "k", "Value": "new"}]},
                              ContentMD5=base64.b64encode(hashlib.md5(b"other bytes").digest()).decode())
    assert error_code(err) == "BadDigest"
    assert s3.get_object_tagging(Bucket="tampered", Key="keep-a")["TagSet"] == [{"Key": "k", "Value": "old"}]


def test_an_x_amz_header_added_after_signing_is_refused_and_stores_nothing(s3):
    # What it injects: a before-send hook adds x-amz-tagging to boto3's PutObject after boto3 signed it (what a
    # party on the way could do: such headers choose what a request does). What it checks: AccessDenied naming the
    # header, as S3 answers, and no object stored (before, the object was stored with the added tag).
    s3.create_bucket(Bucket="unsigned")

    def add_header(request, **_) -> None:
        request.headers["x-amz-tagging"] = "added=1"
    s3.meta.events.register_first("before-send.s3.PutObject", add_header)
    try:
        with pytest.raises(ClientError) as err:
            s3.put_object(Bucket="unsigned", Key="k", Body=b"body")
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", add_header)
    assert error_code(err) == "AccessDenied"
    assert err.value.response["Error"]["HeadersNotSigned"] == "x-amz-tagging"
    assert "Contents" not in s3.list_objects_v2(Bucket="unsigned")


def test_the_aws_cli_copies_lists_and_syncs_a_tree(server, credentials, tmp_path):
    assert AWS is not None, "the aws CLI is not installed: run make setup"
    aws(server, credentials, "s3", "mb", "s3://cli")
    tree = tmp_path / "in"
    (tree / "sub" / "deeper").mkdir(parents=True)
    files = {"a.txt": b"alpha\n", "sub/b.bin": os.urandom(200_000), "sub/deeper/c.bin": os.urandom(7 * 1024 * 1024),
             "space name.txt": b"spaces"}  # under the CLI's 8 MB multipart threshold (not supported yet)
    for name, data in files.items():
        (tree / name).write_bytes(data)
    aws(server, credentials, "s3", "cp", str(tree / "a.txt"), "s3://cli/single/a.txt")
    aws(server, credentials, "s3", "cp", "s3://cli/single/a.txt", str(tmp_path / "a.back"))
    assert (tmp_path / "a.back").read_bytes() == files["a.txt"]
    aws(server, credentials, "s3", "sync", str(tree), "s3://cli/tree")
    listed = aws(server, credentials, "s3", "ls", "--recursive", "s3://cli/tree/").stdout
    assert sorted(line.split(maxsplit=3)[3] for line in listed.splitlines()) == sorted(f"tree/{n}" for n in files)
    back = tmp_path / "out"
    aws(server, credentials, "s3", "sync", "s3://cli/tree", str(back))
    for name, data in files.items():
        assert (back / name).read_bytes() == data, name
    head = aws(server, credentials, "s3api", "head-object", "--bucket", "cli", "--key", "tree/sub/b.bin").stdout
    assert '"ContentLength": 200000' in head
