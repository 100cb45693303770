"""What an S3 request costs the node, counted by the node itself: one bucket read a request (fewer when requests
come at once), a copy moves no block.

The counts are the node's own per-table ones (``system_views.local_read_latency`` and
``local_write_latency``: every read or write of a table's partition), read before and after the requests;
the test session's node serves nobody else meanwhile.
"""

from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor

from casstor_ops.serve.s3.buckets import CLOCK_MARGIN_SECONDS

from .s3_support import client


def table_ops(cql, view: str, keyspace: str, table: str) -> int:
    row = cql.execute(f"SELECT count FROM system_views.{view} WHERE keyspace_name = %s AND table_name = %s",
                      (keyspace, table)).one()
    return row.count if row is not None else 0


def bucket_reads(cql) -> int:
    return table_ops(cql, "local_read_latency", "casstor_meta", "buckets")


def block_ops(cql) -> tuple[int, int]:
    return (table_ops(cql, "local_read_latency", "casstor_data", "blocks"),
            table_ops(cql, "local_write_latency", "casstor_data", "blocks"))


def test_a_put_copy_and_delete_read_their_bucket_once(s3, server, cql):
    """Counts the node's reads of ``casstor_meta.buckets`` during PUTs, a copy, DELETEs and a PUT from another
    origin (CORS headers on its answer) into a versioned bucket: one read a request (the copy: two, its source's
    bucket being another). Before, authorization, the versioning state and the CORS rules read the row each."""
    s3.create_bucket(Bucket="once")
    s3.put_bucket_versioning(Bucket="once", VersioningConfiguration={"Status": "Enabled"})
    s3.create_bucket(Bucket="once-src")
    s3.put_object(Bucket="once-src", Key="s", Body=b"source")
    s3.put_bucket_cors(Bucket="once", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://app.example"], "AllowedMethods": ["PUT"]}]})
    before = bucket_reads(cql)
    for n in range(5):
        s3.put_object(Bucket="once", Key=f"k{n}", Body=os.urandom(1000))
    s3.delete_object(Bucket="once", Key="k0")
    s3.copy_object(Bucket="once", Key="c", CopySource="once-src/s")
    assert bucket_reads(cql) - before == 5 + 1 + 2
    browser = client(server)
    browser.meta.events.register("before-sign.s3.PutObject",
                                 lambda request, **_: request.headers.__setitem__("Origin", "https://app.example"))
    before = bucket_reads(cql)
    answered = browser.put_object(Bucket="once", Key="from-a-page", Body=b"x")
    assert answered["ResponseMetadata"]["HTTPHeaders"]["access-control-allow-origin"] == "https://app.example"
    assert bucket_reads(cql) - before == 1


def test_concurrent_puts_into_one_bucket_share_its_reads(s3, server, cql):
    """16 threads PUT 8 objects each into one bucket at once: the server reads the bucket's row fewer times than
    it was asked (a read is shared by the requests that came while another was in flight: serve/fresh_reads.py),
    and every object is stored. Before, every PUT read the row: 128 reads."""
    s3.create_bucket(Bucket="shared-reads")
    clients = [client(server) for _ in range(16)]
    before = bucket_reads(cql)

    def put(n: int) -> None:
        for m in range(8):
            clients[n].put_object(Bucket="shared-reads", Key=f"k{n}/{m}", Body=os.urandom(4096))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, range(16)))
    reads = bucket_reads(cql) - before
    assert 1 <= reads < 128
    assert s3.list_objects_v2(Bucket="shared-reads")["KeyCount"] == 128


def test_a_copy_reads_and_writes_no_block(s3, cql):
    """Copies an older version of a 20 MiB object (single-part: its ETag the MD5; the copy keeps it) in a
    versioned bucket, and counts the node's reads and writes of ``casstor_data.blocks`` meanwhile: none (before,
    a copy read every block of its source and chunked it again). The copies restore byte-exact."""
    s3.create_bucket(Bucket="big-copies")
    s3.put_bucket_versioning(Bucket="big-copies", VersioningConfiguration={"Status": "Enabled"})
    body = os.urandom(20 * 1024 * 1024)
    put = s3.put_object(Bucket="big-copies", Key="src", Body=body, Metadata={"k": "v"})
    s3.put_object(Bucket="big-copies", Key="src", Body=b"a newer version")
    before = block_ops(cql)
    copied = s3.copy_object(Bucket="big-copies", Key="dst", CopySource={"Bucket": "big-copies", "Key": "src",
                                                                        "VersionId": put["VersionId"]})
    assert block_ops(cql) == before
    assert copied["CopyObjectResult"]["ETag"] == put["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
    assert copied["CopySourceVersionId"] == put["VersionId"] and copied["VersionId"] != put["VersionId"]
    got = s3.get_object(Bucket="big-copies", Key="dst")
    assert got["Body"].read() == body and got["Metadata"] == {"k": "v"} and got["ETag"] == put["ETag"]


def test_a_copy_of_a_multipart_object_keeps_its_etag_and_parts(s3, cql):
    """Copies a two-part object: no block read or written; the copy answers the source's ``MD5-2`` ETag and
    its parts (``partNumber`` GETs), byte-exact."""
    s3.create_bucket(Bucket="mp-copies")
    parts = [os.urandom(5 * 1024 * 1024), os.urandom(1024 * 1024)]
    upload = s3.create_multipart_upload(Bucket="mp-copies", Key="src")["UploadId"]
    etags = [s3.upload_part(Bucket="mp-copies", Key="src", UploadId=upload, PartNumber=n + 1, Body=part)["ETag"]
             for n, part in enumerate(parts)]
    done = s3.complete_multipart_upload(Bucket="mp-copies", Key="src", UploadId=upload, MultipartUpload={
        "Parts": [{"PartNumber": n + 1, "ETag": etag} for n, etag in enumerate(etags)]})
    before = block_ops(cql)
    copied = s3.copy_object(Bucket="mp-copies", Key="dst", CopySource="mp-copies/src")
    assert block_ops(cql) == before
    assert copied["CopyObjectResult"]["ETag"] == done["ETag"] and done["ETag"].endswith('-2"')
    second = s3.get_object(Bucket="mp-copies", Key="dst", PartNumber=2)
    assert second["PartsCount"] == 2 and second["Body"].read() == parts[1]
    assert s3.get_object(Bucket="mp-copies", Key="dst")["Body"].read() == b"".join(parts)


def test_gets_of_an_older_object_read_their_bucket_once_and_a_newer_one_fresh(s3, cql):
    """Counts the node's reads of ``casstor_meta.buckets`` during GETs and HEADs: the first GET of an object
    older than the bucket's row reads it, the next four take the worker's remembered row (before: one read a
    request); a GET of an object committed after the row was read reads it fresh, and so does a GET with
    ``versionId`` and a PUT."""
    s3.create_bucket(Bucket="reads-once")
    s3.put_object(Bucket="reads-once", Key="old", Body=b"old")
    time.sleep(CLOCK_MARGIN_SECONDS + 0.5)  # the object is older than any row read from now on
    before = bucket_reads(cql)
    for _ in range(4):
        assert s3.get_object(Bucket="reads-once", Key="old")["Body"].read() == b"old"
    s3.head_object(Bucket="reads-once", Key="old")
    assert bucket_reads(cql) - before == 1
    s3.put_object(Bucket="reads-once", Key="new", Body=b"new")
    assert bucket_reads(cql) - before == 2
    assert s3.get_object(Bucket="reads-once", Key="new")["Body"].read() == b"new"
    assert bucket_reads(cql) - before == 3
    assert s3.get_object(Bucket="reads-once", Key="old", VersionId="null")["Body"].read() == b"old"
    assert bucket_reads(cql) - before == 4
