"""The S3 face's pure answers (no node): owner-only ACLs, the headers kept with an object, listing encodings,
CreateBucket's location, ListBuckets' page size, UploadPartCopy's range, which objects a remembered bucket
row covers, and the order and grouping of ListMultipartUploads."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from operator import attrgetter

import pytest

from casstor_ops.serve.s3.acl import check_owner_only, policy
from casstor_ops.serve.s3.buckets import CLOCK_MARGIN_SECONDS, ReadGrant, location_of, max_buckets
from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.listing import encoded, rolled_up
from casstor_ops.serve.s3.multipart import Upload, _copy_range, new_upload_id
from casstor_ops.serve.s3.objects import kept_headers
from casstor_ops.serve.s3.xml import parse

OWNER = "AKIAME"


def _code(call) -> str:
    with pytest.raises(S3Error) as err:
        call()
    return err.value.code


def test_only_the_owners_full_control_is_accepted_as_an_acl():
    check_owner_only({}, b"", OWNER)
    check_owner_only({"x-amz-acl": "private"}, b"", OWNER)
    check_owner_only({}, policy(OWNER), OWNER)  # the policy GetObjectAcl answers, sent back
    other = policy(OWNER).replace(f'CanonicalUser"><ID>{OWNER}'.encode(), b'CanonicalUser"><ID>AKIAOTHER')
    assert _code(lambda: check_owner_only({}, other, OWNER)) == "NotImplemented"
    assert _code(lambda: check_owner_only({"x-amz-acl": "public-read"}, b"", OWNER)) == "NotImplemented"
    assert _code(lambda: check_owner_only({"x-amz-grant-read": "id=AKIAOTHER"}, b"", OWNER)) == "NotImplemented"
    assert _code(lambda: check_owner_only({}, b"<AccessControlPolicy", OWNER)) == "MalformedACLError"


def test_the_acl_names_the_owner_and_a_typed_grantee():
    root = parse(policy(OWNER))
    assert root.findtext("Owner/ID") == OWNER
    assert [(g.findtext("Grantee/ID"), g.findtext("Permission")) for g in root.iter("Grant")] == [
        (OWNER, "FULL_CONTROL")]
    assert b'xsi:type="CanonicalUser"' in policy(OWNER)


def test_kept_headers_drop_aws_chunked_from_content_encoding():
    headers = {"cache-control": "no-cache", "expires": "Thu, 01 Jan 2037 00:00:00 GMT", "x-other": "no"}
    assert kept_headers(headers) == {"cache-control": "no-cache", "expires": "Thu, 01 Jan 2037 00:00:00 GMT"}
    assert kept_headers({"content-encoding": "aws-chunked, gzip"}) == {"content-encoding": "gzip"}
    assert kept_headers({"content-encoding": "deflate, gzip"}) == {"content-encoding": "deflate, gzip"}
    assert kept_headers({"content-encoding": "aws-chunked, aws-chunked"}) == {}


def test_url_encoding_is_s3s_percent_encoding():
    assert encoded("quux ab/a+b", "url") == "quux%20ab/a%2Bb"
    assert encoded("quux ab", None) == "quux ab"


def test_create_bucket_location_and_list_buckets_page_size():
    body = b"<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>"
    assert location_of(body) == "eu-west-1"
    assert location_of(b"") is None
    assert _code(lambda: location_of(b"<CreateBucketConfiguration>")) == "MalformedXML"
    assert max_buckets(None) == 10_000 and max_buckets("1") == 1
    assert _code(lambda: max_buckets("0")) == "InvalidArgument"


def test_a_copy_range_past_the_source_is_invalid_range():
    assert _copy_range("bytes=0-4", 5) == (0, 5)
    assert _code(lambda: _copy_range("bytes=0-21", 5)) == "InvalidRange"
    assert _code(lambda: _copy_range("bytes=4-1", 5)) == "InvalidArgument"


def test_a_remembered_bucket_row_covers_only_objects_older_than_its_read_by_the_clock_margin():
    """The driver's naive UTC datetimes and aware ones alike; an object of the margin's seconds before the read,
    or newer, is not covered (it could be in a bucket made again since)."""
    read_at = datetime(2026, 11, 26, 12, 0, 0, tzinfo=timezone.utc)
    grant = ReadGrant(OWNER, read_at.timestamp())
    older = read_at - timedelta(seconds=CLOCK_MARGIN_SECONDS + 1)
    assert grant.covers(older) and grant.covers(older.replace(tzinfo=None))
    for newer in (read_at - timedelta(seconds=CLOCK_MARGIN_SECONDS - 1), read_at + timedelta(seconds=5)):
        assert not grant.covers(newer) and not grant.covers(newer.replace(tzinfo=None))


def test_upload_ids_are_32_hex_digits_in_the_order_they_were_made():
    made = [new_upload_id() for _ in range(200)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in made)
    clocks = [i[:16] for i in made]  # two made in one nanosecond may sort either way: by their random halves
    assert clocks == sorted(clocks) and len(set(made)) == len(made)


def _uploads(*keys: str) -> list[Upload]:
    return [Upload("b", f"{n:032x}", key, {"content_type": None, "meta": {}}, "") for n, key in enumerate(keys)]


def test_list_uploads_rolls_keys_past_the_delimiter_into_common_prefixes_once_and_after_the_marker():
    uploads = _uploads("a.bin", "d/x", "d/y", "d/y", "e/1/z", "f.bin")

    def shown(items, prefix: str, delimiter: str, marker: str) -> list[str]:
        return [u if isinstance(u, str) else u.key
                for u in rolled_up(items, attrgetter("key"), prefix, delimiter, marker)]

    assert shown(uploads, "", "/", "") == ["a.bin", "d/", "e/", "f.bin"]
    assert shown(uploads[2:], "", "/", "d/") == ["e/", "f.bin"]
    assert shown(uploads[4:5], "e/", "/", "") == ["e/1/"]
    assert shown(uploads, "", "", "") == ["a.bin", "d/x", "d/y", "d/y", "e/1/z", "f.bin"]
