"""S3's answers in the details clients and the compatibility suite rely on, through a real server and boto3.

Conditional writes of a missing key, the headers kept with an object and a GET's ``response-*`` overrides,
listing encodings and ``max-keys=0``, torrents, UploadPartCopy ranges, chunked PUTs, a Complete sent again, and
SlowDown during an offline reclaim window.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest
from botocore.exceptions import ClientError

from casstor_ops.store.coordination.reclaim_window import WindowMode, clear_window, open_window

from .s3_support import error_code
from .serve_support import until_no_writer


def test_if_match_on_a_missing_key_is_no_such_key_and_stores_nothing(s3):
    s3.create_bucket(Bucket="ifmatch")
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket="ifmatch", Key="k", Body=b"x", IfMatch="*")
    assert error_code(err) == "NoSuchKey"
    upload = s3.create_multipart_upload(Bucket="ifmatch", Key="k")["UploadId"]
    etag = s3.upload_part(Bucket="ifmatch", Key="k", UploadId=upload, PartNumber=1, Body=b"y")["ETag"]
    with pytest.raises(ClientError) as err:
        s3.complete_multipart_upload(Bucket="ifmatch", Key="k", UploadId=upload, IfMatch='"abc"',
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert error_code(err) == "NoSuchKey"
    assert s3.list_objects_v2(Bucket="ifmatch")["KeyCount"] == 0
    assert s3.delete_object(Bucket="ifmatch", Key="k", IfMatch="*")["ResponseMetadata"]["HTTPStatusCode"] == 204
    etag = s3.put_object(Bucket="ifmatch", Key="k", Body=b"x")["ETag"]
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket="ifmatch", Key="k", Body=b"z", IfMatch='"abc"')
    assert error_code(err) == "PreconditionFailed"  # an existing key with another ETag: 412 still
    assert s3.put_object(Bucket="ifmatch", Key="k", Body=b"z", IfMatch=etag)["ETag"] != etag


def test_cache_control_expires_and_the_content_headers_are_kept_and_a_get_may_override_them(s3):
    s3.create_bucket(Bucket="headers")
    expires = (datetime.now(timezone.utc) + timedelta(hours=2)).replace(microsecond=0)
    written = {"CacheControl": "public, max-age=14400", "ContentDisposition": 'attachment; filename="a.txt"',
               "ContentEncoding": "gzip", "ContentLanguage": "fr", "Expires": expires}
    s3.put_object(Bucket="headers", Key="k", Body=b"x", **written)
    upload = s3.create_multipart_upload(Bucket="headers", Key="m", **written)["UploadId"]
    etag = s3.upload_part(Bucket="headers", Key="m", UploadId=upload, PartNumber=1, Body=b"y")["ETag"]
    s3.complete_multipart_upload(Bucket="headers", Key="m", UploadId=upload,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    s3.copy_object(Bucket="headers", Key="copy", CopySource={"Bucket": "headers", "Key": "k"})
    for key in ("k", "m", "copy"):
        head = s3.head_object(Bucket="headers", Key=key)
        assert {name: head[name] for name in written} == written, key
    s3.put_object(Bucket="headers", Key="framed", Body=b"x", ContentEncoding="aws-chunked")
    assert "ContentEncoding" not in s3.head_object(Bucket="headers", Key="framed")  # the request's framing only
    got = s3.get_object(Bucket="headers", Key="k", ResponseContentType="text/plain", ResponseCacheControl="no-cache",
                        ResponseContentDisposition="inline")["ResponseMetadata"]["HTTPHeaders"]
    assert (got["content-type"], got["cache-control"], got["content-disposition"], got["content-language"]) == (
        "text/plain", "no-cache", "inline", "fr")


def test_listing_percent_encodes_as_s3_and_max_keys_zero_is_an_empty_complete_page(s3):
    s3.create_bucket(Bucket="encoding")
    for key in ("a+b", "quux ab/thud", "x&é"):
        s3.put_object(Bucket="encoding", Key=key, Body=b"x")
    page = s3.list_objects_v2(Bucket="encoding", Delimiter="/", EncodingType="url")  # botocore leaves it encoded
    assert [o["Key"] for o in page["Contents"]] == ["a%2Bb", "x%26%C3%A9"]
    assert [p["Prefix"] for p in page["CommonPrefixes"]] == ["quux%20ab/"]
    for listing in (s3.list_objects, s3.list_objects_v2):
        empty = listing(Bucket="encoding", MaxKeys=0)
        assert empty["IsTruncated"] is False and "Contents" not in empty


def test_torrents_copy_ranges_past_the_end_and_a_chunked_put(s3):
    s3.create_bucket(Bucket="details")
    body = os.urandom(100)
    s3.put_object(Bucket="details", Key="src", Body=body)
    with pytest.raises(ClientError) as err:
        s3.get_object_torrent(Bucket="details", Key="src")
    assert error_code(err) == "NoSuchKey"  # no torrent is kept (as RGW without torrents configured)
    upload = s3.create_multipart_upload(Bucket="details", Key="dst")["UploadId"]
    with pytest.raises(ClientError) as err:
        s3.upload_part_copy(Bucket="details", Key="dst", UploadId=upload, PartNumber=1, CopySourceRange="bytes=0-100",
                            CopySource={"Bucket": "details", "Key": "src"})
    assert error_code(err) == "InvalidRange"

    def chunked(request, **kwargs) -> None:
        request.headers.add_header("Transfer-Encoding", "chunked")

    s3.meta.events.register_first("before-sign.s3.PutObject", chunked)
    try:
        s3.put_object(Bucket="details", Key="chunked", Body=body)
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", chunked)
    assert s3.get_object(Bucket="details", Key="chunked")["Body"].read() == body


def test_a_complete_sent_again_answers_the_object_and_a_part_sent_twice_counts_once(s3):
    s3.create_bucket(Bucket="completes")
    upload = s3.create_multipart_upload(Bucket="completes", Key="k")["UploadId"]
    first = s3.upload_part(Bucket="completes", Key="k", UploadId=upload, PartNumber=1, Body=b"B" * 8)["ETag"]
    last = s3.upload_part(Bucket="completes", Key="k", UploadId=upload, PartNumber=1, Body=b"A" * 8)["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": first}, {"PartNumber": 1, "ETag": last}]}  # re-sent: the last
    done = s3.complete_multipart_upload(Bucket="completes", Key="k", UploadId=upload, MultipartUpload=parts)
    again = s3.complete_multipart_upload(Bucket="completes", Key="k", UploadId=upload, MultipartUpload=parts)
    assert again["ETag"] == done["ETag"]
    assert s3.get_object(Bucket="completes", Key="k")["Body"].read() == b"A" * 8
    assert len(s3.list_object_versions(Bucket="completes", Prefix="k")["Versions"]) == 1  # committed once
    with pytest.raises(ClientError) as err:
        s3.upload_part(Bucket="completes", Key="k", UploadId=upload, PartNumber=2, Body=b"late")
    assert error_code(err) == "NoSuchUpload"
    assert s3.list_multipart_uploads(Bucket="completes").get("Uploads", []) == []


def test_an_offline_reclaim_window_is_answered_slow_down_and_reads_go_on(s3, cql):
    """Injects: an offline reclaim window opened on the store (as `jobs/reclaim.py --offline` does) once the
    server's writer lease is given up. Checks: a PutObject, a DeleteObject and a CreateMultipartUpload are refused
    with S3's 503 SlowDown and Retry-After (boto3 retries it by itself; this client does not), nothing is stored,
    a GET still answers the object's bytes, and writes go on once the window is cleared."""
    s3.create_bucket(Bucket="reclaim-window")  # a name no other test of the session's store uses as a directory
    s3.put_object(Bucket="reclaim-window", Key="before", Body=b"kept")
    until_no_writer(cql, 15)  # the module's server gives its lease up after 2 s idle (--lease-reuse 2)
    open_window(cql, "reclaim@test:1", WindowMode.OFFLINE)
    try:
        for refused in (lambda: s3.put_object(Bucket="reclaim-window", Key="during", Body=b"refused"),
                        lambda: s3.delete_object(Bucket="reclaim-window", Key="before"),
                        lambda: s3.create_multipart_upload(Bucket="reclaim-window", Key="parts")):
            with pytest.raises(ClientError) as err:
                refused()
            answer = err.value.response
            assert (error_code(err), answer["ResponseMetadata"]["HTTPStatusCode"]) == ("SlowDown", 503)
            assert answer["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "5"
        assert s3.get_object(Bucket="reclaim-window", Key="before")["Body"].read() == b"kept"
        assert [o["Key"] for o in s3.list_objects_v2(Bucket="reclaim-window")["Contents"]] == ["before"]
    finally:
        clear_window(cql)
    s3.put_object(Bucket="reclaim-window", Key="after", Body=b"ok")
    assert s3.get_object(Bucket="reclaim-window", Key="after")["Body"].read() == b"ok"
