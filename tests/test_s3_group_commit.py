"""S3 PutObjects in the plain PUT's group commit (``casstor_ops/serve/group_commit.py``), on a real server and node.

A concurrent burst of 64 KiB PutObjects (not kept inline: the test store's
blocks) lands byte-exact with its ETag, metadata, headers, checksum and
version id; the node shows they went through batches: its coordinator counts
an unlogged batch of heads as one write of ``versions``
(``system_views.coordinator_write_latency``), so it counts fewer than PUTs.
A body is digested and checked on the group's thread, in its batch: one
whose Content-MD5 does not match fails its own PUT only.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib

import pytest
from botocore.exceptions import ClientError

from casstor_ops.store.cql.keyspaces import META_KS

from .serve_support import at_once
from .test_s3_costs import table_ops

PUTS = 24
SIZE = 64 * 1024


def head_writes(cql) -> int:
    """The writes of ``versions`` the node coordinated (an unlogged batch of many heads counts one)."""
    return table_ops(cql, "coordinator_write_latency", META_KS, "versions")


def test_a_burst_of_s3_puts_lands_byte_exact_with_its_attributes_through_batches(s3, cql) -> None:
    """PUTS threads each PutObject 64 KiB of its own (with metadata, a content type, Cache-Control, a CRC32 checksum
    and Content-MD5) at once into a versioned bucket: each answer has the MD5 ETag, the checksum and a version id;
    a GET of that version gives the bytes, ETag, metadata and headers back; the node coordinated fewer writes of
    ``versions`` than PUTs (without the group commit each S3 PUT writes its head alone: as many)."""
    s3.create_bucket(Bucket="burst")
    s3.put_bucket_versioning(Bucket="burst", VersioningConfiguration={"Status": "Enabled"})
    bodies = [os.urandom(SIZE) for _ in range(PUTS)]
    before = head_writes(cql)

    def put(n: int) -> dict:
        return s3.put_object(Bucket="burst", Key=f"k{n}", Body=bodies[n], ContentType="text/x-burst",
                             Metadata={"n": str(n)}, CacheControl="max-age=9", ChecksumAlgorithm="CRC32",
                             ContentMD5=base64.b64encode(hashlib.md5(bodies[n]).digest()).decode())

    answers = at_once(put, PUTS)
    written = head_writes(cql) - before
    for n, answer in enumerate(answers):
        assert answer["ETag"] == f'"{hashlib.md5(bodies[n]).hexdigest()}"'
        assert answer["ChecksumCRC32"] == base64.b64encode(zlib.crc32(bodies[n]).to_bytes(4, "big")).decode()
        got = s3.get_object(Bucket="burst", Key=f"k{n}", VersionId=answer["VersionId"])
        assert got["Body"].read() == bodies[n]
        assert (got["ETag"], got["VersionId"], got["ContentType"], got["Metadata"], got["CacheControl"]) == \
            (answer["ETag"], answer["VersionId"], "text/x-burst", {"n": str(n)}, "max-age=9")
    assert written < PUTS


def test_a_body_that_fails_its_digest_in_a_batch_fails_its_own_put_only(s3, cql) -> None:
    """PUTS threads PutObject at once, every third with a Content-MD5 of other bytes (the check that runs on the
    group's thread, as the batch is prepared): each of those is refused with BadDigest and leaves no object; every
    other lands byte-exact with its ETag; and the good ones still went through batches (fewer head writes than
    PUTs), so a refused body did not fail the batch it was in."""
    s3.create_bucket(Bucket="digests")
    bodies = [os.urandom(SIZE) for _ in range(PUTS)]
    bad = {n for n in range(PUTS) if n % 3 == 0}
    before = head_writes(cql)

    def put(n: int) -> dict | str:
        digest = hashlib.md5(bodies[n] + (b"other" if n in bad else b"")).digest()
        try:
            return s3.put_object(Bucket="digests", Key=f"k{n}", Body=bodies[n],
                                 ContentMD5=base64.b64encode(digest).decode())
        except ClientError as err:
            return err.response["Error"]["Code"]

    answers = at_once(put, PUTS)
    written = head_writes(cql) - before
    for n, answer in enumerate(answers):
        if n in bad:
            assert answer == "BadDigest"
            with pytest.raises(ClientError, match="404"):
                s3.head_object(Bucket="digests", Key=f"k{n}")
        else:
            assert answer["ETag"] == f'"{hashlib.md5(bodies[n]).hexdigest()}"'
            assert s3.get_object(Bucket="digests", Key=f"k{n}")["Body"].read() == bodies[n]
    assert written < PUTS - len(bad)
