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
    assert pages == 2 and sorted(seen) == [(k, n) for k in "abc" for n in (1, 2)]  # pages of 3: a, a, b; b, c, c


def test_a_version_listing_of_many_keys_pages_through_its_reads_in_key_order(s3):
    """ListObjectVersions reads the version rows of a page's keys at once (``store.row_requests``): 70 keys of
    two versions each, listed in pages of 45 versions (so pages end inside a window of reads), come back once each,
    in key order, newest first, each version with the algorithm and type of the CRC32 boto3 sent with it."""
    s3.create_bucket(Bucket="vers-many")
    s3.put_bucket_versioning(Bucket="vers-many", VersioningConfiguration={"Status": "Enabled"})
    keys = [f"k{n:03d}" for n in range(70)]
    for key in keys:
        for body in (b"1", b"22"):
            s3.put_object(Bucket="vers-many", Key=key, Body=body, ChecksumAlgorithm="CRC32")
    kwargs, seen = {"Bucket": "vers-many", "MaxKeys": 45}, []
    while True:
        listed = s3.list_object_versions(**kwargs)
        seen += [(v["Key"], v["Size"], v["IsLatest"], v["ChecksumAlgorithm"], v["ChecksumType"])
                 for v in listed.get("Versions", [])]
        if not listed["IsTruncated"]:
            break
        kwargs.update(KeyMarker=listed["NextKeyMarker"], VersionIdMarker=listed["NextVersionIdMarker"])
    assert seen == [(key, size, size == 2, ["CRC32"], "FULL_OBJECT") for key in keys for size in (2, 1)]


def test_a_key_of_more_versions_than_max_keys_is_listed_a_page_of_max_keys_at_a_time(s3):
    """What it injects: one key of seven versions and a delete marker, listed three a page. What it checks: no
    page holds more than MaxKeys, pages go on inside the key from the markers they return, and every version and
    the marker come once, newest first (before, the first page held all eight)."""
    s3.create_bucket(Bucket="vers-deep")
    s3.put_bucket_versioning(Bucket="vers-deep", VersioningConfiguration={"Status": "Enabled"})
    made = [s3.put_object(Bucket="vers-deep", Key="k", Body=b"x" * n)["VersionId"] for n in range(1, 5)]
    made.append(s3.delete_object(Bucket="vers-deep", Key="k")["VersionId"])
    made += [s3.put_object(Bucket="vers-deep", Key="k", Body=b"x" * n)["VersionId"] for n in range(5, 8)]
    pages = s3.get_paginator("list_object_versions").paginate(Bucket="vers-deep", PaginationConfig={"PageSize": 3})
    listed = [[v["VersionId"] for v in page.get("Versions", []) + page.get("DeleteMarkers", [])] for page in pages]
    assert [len(page) for page in listed] == [3, 3, 2]
    assert [set(page) for page in listed] == [set(made[7:4:-1]), set(made[4:1:-1]), set(made[1::-1])]
    with pytest.raises(ClientError) as err:
        s3.list_object_versions(Bucket="vers-deep", VersionIdMarker=made[0])
    assert error_code(err) == "InvalidArgument"


def _listed(s3, bucket: str) -> dict[str, int]:
    """ListObjectsV2 (read from the directory index): key -> size."""
    return {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}


def test_writes_answer_their_version_id_and_deletes_their_marker(s3):
    s3.create_bucket(Bucket="vids")
    s3.put_bucket_versioning(Bucket="vids", VersioningConfiguration={"Status": "Enabled"})
    put = s3.put_object(Bucket="vids", Key="a", Body=b"one")["VersionId"]
    copied = s3.copy_object(Bucket="vids", Key="b", CopySource={"Bucket": "vids", "Key": "a", "VersionId": put})
    assert copied["CopySourceVersionId"] == put and copied["VersionId"] != put
    upload = s3.create_multipart_upload(Bucket="vids", Key="c")["UploadId"]
    etag = s3.upload_part(Bucket="vids", Key="c", UploadId=upload, PartNumber=1, Body=b"part")["ETag"]
    done = s3.complete_multipart_upload(Bucket="vids", Key="c", UploadId=upload,
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    again = s3.complete_multipart_upload(Bucket="vids", Key="c", UploadId=upload,  # a client's retry
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert (again["ETag"], again["VersionId"]) == (done["ETag"], done["VersionId"])
    listed = {v["Key"]: v["VersionId"] for v in s3.list_object_versions(Bucket="vids")["Versions"]}
    assert listed == {"a": put, "b": copied["VersionId"], "c": done["VersionId"]}
    removed = s3.delete_object(Bucket="vids", Key="a")
    assert removed["DeleteMarker"] and removed["VersionId"] not in (put, "null")
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket="vids", Key="a")
    assert err.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket="vids", Key="a", Body=b"two", IfMatch="*")  # no current object: S3's NoSuchKey
    assert error_code(err) == "NoSuchKey"
    many = s3.delete_objects(Bucket="vids", Delete={"Objects": [{"Key": "new"}, {"Key": "a", "VersionId": put}]})
    assert sorted((d["Key"], d.get("DeleteMarker", False)) for d in many["Deleted"]) == [("a", False), ("new", True)]
    markers = s3.list_object_versions(Bucket="vids")["DeleteMarkers"]
    assert {m["Key"] for m in markers} == {"a", "new"}
    # A bucket never versioned answers no versionId, and a DELETE leaves no marker S3 shows.
    s3.create_bucket(Bucket="plain")
    assert "VersionId" not in s3.put_object(Bucket="plain", Key="k", Body=b"x")
    assert "DeleteMarker" not in s3.delete_object(Bucket="plain", Key="k")
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket="plain", Key="k")
    assert err.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "false"
    assert "DeleteMarkers" not in s3.list_object_versions(Bucket="plain")


def test_deleting_the_current_version_makes_the_previous_one_current_in_the_listing_too(s3):
    """Drops the current version by versionId three times in a row: each time the object and the directory index's
    entry (ListObjectsV2's size) must be the previous version's, then nothing. The second rewrite of the entry is
    stamped after the first: stamped with the dropped version's time (older each time) it was lost, and the
    listing kept showing the version dropped before."""
    s3.create_bucket(Bucket="vcur")
    s3.put_bucket_versioning(Bucket="vcur", VersioningConfiguration={"Status": "Enabled"})
    ids = [s3.put_object(Bucket="vcur", Key="k", Body=b"x" * n)["VersionId"] for n in (1, 2, 3)]
    for dropped, size in zip(reversed(ids), (2, 1)):
        s3.delete_object(Bucket="vcur", Key="k", VersionId=dropped)
        assert s3.get_object(Bucket="vcur", Key="k")["ContentLength"] == size
        assert _listed(s3, "vcur") == {"k": size}
        latest = [v["IsLatest"] for v in s3.list_object_versions(Bucket="vcur")["Versions"]]
        assert latest == [True] + [False] * (size - 1)
    s3.delete_object(Bucket="vcur", Key="k", VersionId=ids[0])
    assert _listed(s3, "vcur") == {} and "Versions" not in s3.list_object_versions(Bucket="vcur")
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="vcur", Key="k")
    assert error_code(err) == "NoSuchKey"
    s3.put_object(Bucket="vcur", Key="k", Body=b"again")  # a later store wins over the rewritten entries
    assert _listed(s3, "vcur") == {"k": 5}
    marker = s3.delete_object(Bucket="vcur", Key="k")["VersionId"]
    s3.delete_object(Bucket="vcur", Key="k", VersionId=marker)  # dropping a current marker brings the object back
    assert s3.get_object(Bucket="vcur", Key="k")["Body"].read() == b"again" and _listed(s3, "vcur") == {"k": 5}


def test_the_null_version_before_versioning_and_while_suspended(s3):
    s3.create_bucket(Bucket="vnull")
    s3.put_object(Bucket="vnull", Key="k", Body=b"plain")
    s3.put_bucket_versioning(Bucket="vnull", VersioningConfiguration={"Status": "Enabled"})
    newer = s3.put_object(Bucket="vnull", Key="k", Body=b"versioned")["VersionId"]
    assert [v["VersionId"] for v in s3.list_object_versions(Bucket="vnull")["Versions"]] == [newer, "null"]
    assert s3.get_object(Bucket="vnull", Key="k", VersionId="null")["Body"].read() == b"plain"
    copy = {"Bucket": "vnull", "Key": "k", "VersionId": "null"}
    s3.copy_object(Bucket="vnull", Key="copy", CopySource=copy)
    assert s3.get_object(Bucket="vnull", Key="copy")["Body"].read() == b"plain"
    s3.put_bucket_versioning(Bucket="vnull", VersioningConfiguration={"Status": "Suspended"})
    for body in (b"s1", b"s2"):  # each replaces the null version
        assert "VersionId" not in s3.put_object(Bucket="vnull", Key="k", Body=body)
    assert [v["VersionId"] for v in s3.list_object_versions(Bucket="vnull", Prefix="k")["Versions"]] == ["null", newer]
    assert s3.get_object(Bucket="vnull", Key="k")["Body"].read() == b"s2"
    assert s3.delete_object(Bucket="vnull", Key="k")["VersionId"] == "null"  # the marker replaces it too
    listed = s3.list_object_versions(Bucket="vnull", Prefix="k")
    assert [v["VersionId"] for v in listed["Versions"]] == [newer]
    assert [m["VersionId"] for m in listed["DeleteMarkers"]] == ["null"]
    s3.delete_object(Bucket="vnull", Key="k", VersionId="null")
    assert s3.get_object(Bucket="vnull", Key="k")["Body"].read() == b"versioned"
