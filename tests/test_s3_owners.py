"""Buckets have owners (the access key that created them) and owner-only ACLs, through a real server and boto3.

Two users of one server: each sees and touches only their own buckets (AccessDenied otherwise, a copy from
the other's bucket included); a bucket name is one namespace (BucketAlreadyExists). ACLs answer the owner's
FULL_CONTROL and accept only ``private``.
"""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from casstor_ops.serve.s3.buckets import CLOCK_MARGIN_SECONDS

from .s3_support import ALT_KEY, KEY, error_code


def test_a_bucket_is_its_creators_alone_and_a_second_create_by_them_changes_nothing(s3, s3_alt):
    s3.create_bucket(Bucket="own-main", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_object(Bucket="own-main", Key="k", Body=b"main's")
    s3.create_bucket(Bucket="own-main")  # its owner again: 200 (us-east-1), nothing overwritten
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="own-main")["Contents"]] == ["k"]
    assert s3.get_bucket_location(Bucket="own-main")["LocationConstraint"] == "eu-west-1"
    with pytest.raises(ClientError) as err:
        s3_alt.create_bucket(Bucket="own-main")
    assert error_code(err) == "BucketAlreadyExists"
    s3_alt.create_bucket(Bucket="own-alt")
    assert "own-main" not in [b["Name"] for b in s3_alt.list_buckets()["Buckets"]]
    assert "own-alt" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    for refused in (lambda: s3_alt.get_object(Bucket="own-main", Key="k"),
                    lambda: s3_alt.put_object(Bucket="own-main", Key="x", Body=b"x"),
                    lambda: s3_alt.list_objects_v2(Bucket="own-main"),
                    lambda: s3_alt.delete_bucket(Bucket="own-main"),
                    lambda: s3_alt.copy_object(Bucket="own-alt", Key="stolen",
                                               CopySource={"Bucket": "own-main", "Key": "k"})):
        with pytest.raises(ClientError) as err:
            refused()
        assert error_code(err) == "AccessDenied"
    assert s3_alt.list_objects_v2(Bucket="own-alt")["KeyCount"] == 0
    assert s3.get_object(Bucket="own-main", Key="k")["Body"].read() == b"main's"


def test_list_buckets_pages_by_max_buckets(s3_alt):
    names = [f"page-{i}" for i in range(3)]
    for name in names:
        s3_alt.create_bucket(Bucket=name)
    mine = sorted(b["Name"] for b in s3_alt.list_buckets()["Buckets"])
    pages, token = [], None
    while True:
        page = s3_alt.list_buckets(MaxBuckets=2, **({"ContinuationToken": token} if token else {}))
        pages.append([b["Name"] for b in page["Buckets"]])
        token = page.get("ContinuationToken")
        if token is None:
            break
    assert all(len(shown) <= 2 for shown in pages) and len(pages) == (len(mine) + 1) // 2
    assert sum(pages, []) == mine and set(names) <= set(mine)


def test_acls_are_the_owners_full_control_and_only_private_is_accepted(s3):
    s3.create_bucket(Bucket="acls")
    s3.put_object(Bucket="acls", Key="k", Body=b"x")
    for acl in (s3.get_bucket_acl(Bucket="acls"), s3.get_object_acl(Bucket="acls", Key="k")):
        assert acl["Owner"]["ID"] == KEY
        assert [(g["Grantee"]["ID"], g["Grantee"]["Type"], g["Permission"]) for g in acl["Grants"]] == [
            (KEY, "CanonicalUser", "FULL_CONTROL")]
    assert s3.list_objects(Bucket="acls")["Contents"][0]["Owner"]["ID"] == KEY
    s3.put_bucket_acl(Bucket="acls", ACL="private")
    s3.put_object_acl(Bucket="acls", Key="k", ACL="private")
    owner = s3.get_object_acl(Bucket="acls", Key="k")
    s3.put_object_acl(Bucket="acls", Key="k", AccessControlPolicy={"Owner": owner["Owner"], "Grants": owner["Grants"]})
    shared = {"Owner": owner["Owner"], "Grants": owner["Grants"] + [
        {"Grantee": {"ID": ALT_KEY, "Type": "CanonicalUser"}, "Permission": "READ"}]}
    for refused in (lambda: s3.put_bucket_acl(Bucket="acls", ACL="public-read"),
                    lambda: s3.put_object_acl(Bucket="acls", Key="k", ACL="public-read-write"),
                    lambda: s3.put_object_acl(Bucket="acls", Key="k", AccessControlPolicy=shared),
                    lambda: s3.put_object_acl(Bucket="acls", Key="k", GrantRead=f"id={ALT_KEY}")):
        with pytest.raises(ClientError) as err:
            refused()
        assert error_code(err) == "NotImplemented"
    with pytest.raises(ClientError) as err:
        s3.get_object_acl(Bucket="acls", Key="missing")
    assert error_code(err) == "NoSuchKey"


def test_a_get_on_a_remembered_bucket_row_never_reads_a_bucket_made_again_by_another_user(s3, s3_alt):
    """The main user GETs an object (the worker now remembers the bucket's row, owner: main), then empties and
    deletes the bucket; the other user makes a bucket of that name and PUTs the same key. The main user's GET
    and HEAD of it within the row's remembered seconds are AccessDenied (the object is newer than the row: it
    is checked on a fresh one), not the other user's bytes; once that bucket is gone, NoSuchBucket."""
    s3.create_bucket(Bucket="made-again")
    s3.put_object(Bucket="made-again", Key="k", Body=b"main's")
    time.sleep(CLOCK_MARGIN_SECONDS + 0.5)  # older than the row the GET reads: it will be remembered
    assert s3.get_object(Bucket="made-again", Key="k")["Body"].read() == b"main's"
    s3.delete_object(Bucket="made-again", Key="k")
    s3.delete_bucket(Bucket="made-again")
    s3_alt.create_bucket(Bucket="made-again")
    s3_alt.put_object(Bucket="made-again", Key="k", Body=b"alt's")
    for refused in (lambda: s3.get_object(Bucket="made-again", Key="k"),
                    lambda: s3.head_object(Bucket="made-again", Key="k")):
        with pytest.raises(ClientError) as err:
            refused()
        assert error_code(err) in ("AccessDenied", "403")
    s3_alt.delete_object(Bucket="made-again", Key="k")
    s3_alt.delete_bucket(Bucket="made-again")
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="made-again", Key="k")
    assert error_code(err) == "NoSuchBucket"
