"""S3 versioning on the store's history, through a real ``casstor serve --s3`` process and boto3."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from casstor_ops.store.history.forget import forget
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.schema import require_settings

from .s3_support import error_code


def test_versions_are_listed_read_by_id_kept_by_forget_and_dropped_one_by_one(s3, cql):
    s3.create_bucket(Bucket="vers")
    assert "Status" not in s3.get_bucket_versioning(Bucket="vers")
    s3.put_bucket_versioning(Bucket="vers", VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket="vers")["Status"] == "Enabled"
    for body in (b"one", b"two", b"three"):
        s3.put_object(Bucket="vers", Key="doc.txt", Body=body)
    s3.delete_object(Bucket="vers", Key="doc.txt")
    listed = s3.list_object_versions(Bucket="vers")
    versions, markers = listed["Versions"], listed["DeleteMarkers"]
    assert [v["Size"] for v in versions] == [5, 3, 3] and not any(v["IsLatest"] for v in versions)
    assert len(markers) == 1 and markers[0]["IsLatest"] and markers[0]["Key"] == "doc.txt"
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="vers", Key="doc.txt")
    assert error_code(err) == "NoSuchKey"
    oldest = versions[-1]["VersionId"]
    got = s3.get_object(Bucket="vers", Key="doc.txt", VersionId=oldest)
    assert got["Body"].read() == b"one" and got["VersionId"] == oldest
    assert s3.head_object(Bucket="vers", Key="doc.txt", VersionId=versions[0]["VersionId"])["ContentLength"] == 5
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="vers", Key="doc.txt", VersionId="not-a-version")
    assert error_code(err) == "NoSuchVersion"
    # forget long after: the bucket's policy (keep every version) keeps them all.
    forget(cql, Namespace.for_session(cql, require_settings(cql).directory_rows), "vers/", now=4e9)
    assert len(s3.list_object_versions(Bucket="vers")["Versions"]) == 3
    s3.delete_object(Bucket="vers", Key="doc.txt", VersionId=oldest)
    assert [v["Size"] for v in s3.list_object_versions(Bucket="vers")["Versions"]] == [5, 3]
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="vers", Key="doc.txt", VersionId=oldest)
    assert error_code(err) == "NoSuchVersion"


def test_a_truncated_version_listing_pages_on_with_the_markers_it_returns(s3):
    """Pages ListObjectVersions as the S3 compatibility suite's cleanup does (KeyMarker and VersionIdMarker
    from the previous page, as given): a truncated page without NextVersionIdMarker made botocore refuse
    the next request (ParamValidationError), which left a bucket behind and failed every later test."""
    s3.create_bucket(Bucket="vers-pages")
    s3.put_bucket_versioning(Bucket="vers-pages", VersioningConfiguration={"Status": "Enabled"})
    for key in ("a", "b", "c"):
        for body in (b"1", b"22"):
            s3.put_object(Bucket="vers-pages", Key=key, Body=body)
    kwargs, pages, seen = {"Bucket": "vers-pages", "MaxKeys": 3}, 0, []
    while True:
        listed = s3.list_object_versions(**kwargs)
        seen += [(v["Key"], v["Size"]) for v in listed.get("Versions", [])]
        pages += 1
        if not listed["IsTruncated"]:
            break
        kwargs.update(KeyMarker=listed.get("NextKeyMarker"), VersionIdMarker=listed.get("NextVersionIdMarker"))
    assert pages == 3 and sorted(seen) == [(k, n) for k in "abc" for n in (1, 2)]
