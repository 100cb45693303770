"""S3 multipart uploads through a real ``casstor serve --s3`` process, driven by boto3 and the aws CLI.

Every round trip is compared byte for byte; dedup is counted in the
``existing_blocks`` index (a block stored once has one row).
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import time

import pytest
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.engine import catalog
from casstor_ops.store.engine.multipart import UPLOADS
from casstor_ops.store.engine.upload import source_file_hash
from casstor_ops.store.history.forget import forget
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.namespace.listing import entries_under
from casstor_ops.store.schema import require_settings

from .s3_support import AWS, aws, error_code
from .support import SESSION_SETTINGS

MiB = 1024 * 1024


def _blocks(cql) -> int:
    return cql.execute("SELECT count(*) FROM casstor_data.existing_blocks").one()[0]


def _upload(s3, bucket: str, key: str, data: bytes, part_size: int) -> dict:
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key, ContentType="application/x-test",
                                           Metadata={"origin": "parts"})["UploadId"]
    parts = []
    for number, start in enumerate(range(0, len(data), part_size), 1):
        etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number,
                              Body=data[start:start + part_size])["ETag"]
        parts.append({"PartNumber": number, "ETag": etag})
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                        MultipartUpload={"Parts": parts})


def _part_blocks(data: bytes, part_size: int) -> set[bytes]:
    """The blocks of ``data`` uploaded in parts of ``part_size``: each part is cut as a file of its own."""
    return {block_hash(block) for start in range(0, len(data), part_size)
            for block in chunks(io.BytesIO(data[start:start + part_size]), SESSION_SETTINGS)}


def _etag(data: bytes, part_size: int) -> str:
    md5s = [hashlib.md5(data[i:i + part_size]).digest() for i in range(0, len(data), part_size)]
    return f'"{hashlib.md5(b"".join(md5s)).hexdigest()}-{len(md5s)}"'


def _whole_blocks(data: bytes) -> set[bytes]:
    """The blocks of ``data`` stored as one file (a PUT, ``casstor store``)."""
    return {block_hash(block) for block in chunks(io.BytesIO(data), SESSION_SETTINGS)}


def test_a_multipart_object_is_its_parts_end_to_end_with_s3s_etag_and_the_blocks_of_one_store_whatever_its_parts(
        s3, cql):
    """What it injects: 13 MiB uploaded in 5 MiB parts, again, then in 6 MiB parts, then PUT whole. What it checks:
    the object is its parts' bytes with S3's ETag, and its block list is the one a store of the whole bytes makes
    (its file hash is theirs: the blocks around each seam are cut again at Complete), so a second upload with
    another part size, or a PUT of the same bytes, adds no block to the object; only the new parts' own seam
    blocks (left to reclaim with the parts) and the upload's record are new. Before the seams were cut again, the
    object kept its parts' seam blocks: its file hash was not a store's, and each part size moved 6-22 blocks."""
    s3.create_bucket(Bucket="mpu")
    data = random.Random(6).randbytes(13 * MiB)  # fixed: how many blocks a new part size moves depends on the bytes
    st = Statements.for_session(cql)
    whole_hash = source_file_hash(io.BytesIO(data), SESSION_SETTINGS)
    done = _upload(s3, "mpu", "big.bin", data, 5 * MiB)
    assert done["ETag"] == _etag(data, 5 * MiB)
    assert catalog.head(cql, st, "mpu/big.bin").hash == whole_hash
    got = s3.get_object(Bucket="mpu", Key="big.bin")
    assert got["Body"].read() == data
    assert got["ETag"] == done["ETag"] and got["ContentType"] == "application/x-test"
    assert got["Metadata"] == {"origin": "parts"}
    assert s3.get_object(Bucket="mpu", Key="big.bin", Range="bytes=5242870-5242890")["Body"].read() == \
        data[5242870:5242891]
    # No listing of the bucket shows the parts; the upload is gone once completed.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="mpu")["Contents"]] == ["big.bin"]
    assert s3.list_multipart_uploads(Bucket="mpu").get("Uploads", []) == []
    before = _blocks(cql)
    _upload(s3, "mpu", "big.bin", data, 5 * MiB)  # the upload's record (its key) is the same small block too
    assert _blocks(cql) == before  # the same parts again: every block found, none written
    _upload(s3, "mpu", "big.bin", data, 6 * MiB)
    assert catalog.head(cql, st, "mpu/big.bin").hash == whole_hash
    # The 6 MiB parts' own blocks at their seams are new, and the completed upload's record, which names the new
    # ETag (md5-of-md5s-3 of other parts); the object's blocks were all there.
    moved = _part_blocks(data, 6 * MiB) - _part_blocks(data, 5 * MiB) - _whole_blocks(data)
    assert 0 < len(moved) < len(_whole_blocks(data)) / 8
    assert _blocks(cql) - before == len(moved) + 1
    assert s3.get_object(Bucket="mpu", Key="big.bin")["Body"].read() == data
    blocks = _blocks(cql)
    s3.put_object(Bucket="mpu", Key="whole.bin", Body=data)
    assert _blocks(cql) == blocks and catalog.head(cql, st, "mpu/whole.bin").hash == whole_hash


def test_a_completed_uploads_parts_are_removed_and_their_versions_left_to_forget(s3, cql):
    """Complete writes a delete marker for each of the parts (many at once, :meth:`Store.remove_all`) and their
    block lists, ETags and checksums are read many at once: the object is its parts end to end with boto3's CRC32,
    no part is listed afterwards, only the completed upload's record, and each part keeps its version for forget.
    Before that, ListParts answers each part's CRC32 as it was sent, and the upload's algorithm and type."""
    s3.create_bucket(Bucket="mp-many")
    parts = [os.urandom(5 * MiB)] * 11 + [b"tail"]  # the same part again: stored once, so the test stays quick
    upload_id = s3.create_multipart_upload(Bucket="mp-many", Key="k", ChecksumAlgorithm="CRC32")["UploadId"]
    listed = []
    for number, body in enumerate(parts, 1):
        sent = s3.upload_part(Bucket="mp-many", Key="k", UploadId=upload_id, PartNumber=number, Body=body,
                              ChecksumAlgorithm="CRC32")
        listed.append({"PartNumber": number, "ETag": sent["ETag"], "ChecksumCRC32": sent["ChecksumCRC32"]})
    answer = s3.list_parts(Bucket="mp-many", Key="k", UploadId=upload_id)
    assert (answer["ChecksumAlgorithm"], answer["ChecksumType"]) == ("CRC32", "COMPOSITE")
    assert [{k: p[k] for k in ("PartNumber", "ETag", "ChecksumCRC32")} for p in answer["Parts"]] == listed
    s3.complete_multipart_upload(Bucket="mp-many", Key="k", UploadId=upload_id, MultipartUpload={"Parts": listed})
    assert s3.get_object(Bucket="mp-many", Key="k")["Body"].read() == b"".join(parts)
    st = Statements.for_session(cql)
    upload = f"{UPLOADS}mp-many/{upload_id}/"
    assert [f.id for f in catalog.list_files(cql, st, upload)] == [f"{upload}upload"]
    for number in range(1, len(parts) + 1):
        marker, kept = catalog.versions(cql, st, f"{upload}{number:05d}")
        assert marker.deleted and kept.file.size == len(parts[number - 1])


def test_list_parts_list_uploads_abort_and_the_refusals(s3):
    s3.create_bucket(Bucket="mp-list")
    upload_id = s3.create_multipart_upload(Bucket="mp-list", Key="dir/x.bin")["UploadId"]
    other = s3.create_multipart_upload(Bucket="mp-list", Key="y.bin")["UploadId"]
    small = os.urandom(1000)
    first = s3.upload_part(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id, PartNumber=1,
                           Body=os.urandom(5 * MiB))["ETag"]
    s3.upload_part(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id, PartNumber=3, Body=small)
    parts = s3.list_parts(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, 5 * MiB), (3, 1000)]
    assert parts[0]["ETag"] == first and parts[1]["ETag"] == f'"{hashlib.md5(small).hexdigest()}"'
    uploads = s3.list_multipart_uploads(Bucket="mp-list")["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in uploads] == [("dir/x.bin", upload_id), ("y.bin", other)]
    assert [u["Key"] for u in s3.list_multipart_uploads(Bucket="mp-list", Prefix="y")["Uploads"]] == ["y.bin"]
    grouped = s3.list_multipart_uploads(Bucket="mp-list", Delimiter="/", MaxUploads=1)
    assert grouped["CommonPrefixes"] == [{"Prefix": "dir/"}] and "Uploads" not in grouped and grouped["IsTruncated"]
    rest = s3.list_multipart_uploads(Bucket="mp-list", Delimiter="/", KeyMarker=grouped["NextKeyMarker"])
    assert [u["Key"] for u in rest["Uploads"]] == ["y.bin"] and "CommonPrefixes" not in rest
    assert "Contents" not in s3.list_objects_v2(Bucket="mp-list")
    refusals = [([{"PartNumber": 3, "ETag": parts[1]["ETag"]}, {"PartNumber": 1, "ETag": first}], "InvalidPartOrder"),
                ([{"PartNumber": 1, "ETag": first}, {"PartNumber": 2, "ETag": first}], "InvalidPart"),
                ([{"PartNumber": 1, "ETag": '"0123"'}], "InvalidPart"),
                ([{"PartNumber": 3, "ETag": parts[1]["ETag"]}, {"PartNumber": 4, "ETag": first}], "InvalidPart")]
    for listed, code in refusals:
        with pytest.raises(ClientError) as err:
            s3.complete_multipart_upload(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id,
                                         MultipartUpload={"Parts": listed})
        assert error_code(err) == code
    s3.upload_part(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id, PartNumber=2, Body=small)
    with pytest.raises(ClientError) as err:  # part 2 is under 5 MiB and not the last
        s3.complete_multipart_upload(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id, MultipartUpload={
            "Parts": [{"PartNumber": n, "ETag": p} for n, p in
                      [(1, first), (2, parts[1]["ETag"]), (3, parts[1]["ETag"])]]})
    assert error_code(err) == "EntityTooSmall"
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket="mp-list", Key="dir/x.bin")  # nothing committed by the refusals
    s3.abort_multipart_upload(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id)
    for call in (lambda: s3.list_parts(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id),
                 lambda: s3.upload_part(Bucket="mp-list", Key="dir/x.bin", UploadId=upload_id, PartNumber=1,
                                        Body=b"x"),
                 lambda: s3.list_parts(Bucket="mp-list", Key="y.bin", UploadId="not-an-upload")):
        with pytest.raises(ClientError) as err:
            call()
        assert error_code(err) == "NoSuchUpload"
    assert [u["Key"] for u in s3.list_multipart_uploads(Bucket="mp-list")["Uploads"]] == ["y.bin"]


def test_list_uploads_pages_through_many_uploads_of_a_key_each_once_oldest_first(s3):
    """What it injects: three uploads under way for each of five keys, one completed and one aborted among them,
    listed two a page, so pages end between uploads of one key. What it checks: each upload under way is listed
    once, by key, each key's oldest first, and the completed and aborted ones not at all."""
    s3.create_bucket(Bucket="mp-many")
    made = [(f"k{k}", s3.create_multipart_upload(Bucket="mp-many", Key=f"k{k}")["UploadId"])
            for _ in range(3) for k in range(5)]
    done_key, done_id = made[6]
    etag = s3.upload_part(Bucket="mp-many", Key=done_key, UploadId=done_id, PartNumber=1, Body=b"x")["ETag"]
    s3.complete_multipart_upload(Bucket="mp-many", Key=done_key, UploadId=done_id,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    s3.abort_multipart_upload(Bucket="mp-many", Key=made[3][0], UploadId=made[3][1])
    pages = s3.get_paginator("list_multipart_uploads").paginate(Bucket="mp-many", PaginationConfig={"PageSize": 2})
    listed = [(u["Key"], u["UploadId"]) for page in pages for u in page.get("Uploads", [])]
    expected = sorted((pair for pair in made if pair not in (made[3], made[6])),
                      key=lambda pair: (pair[0], made.index(pair)))
    assert listed == expected


def test_upload_part_copy_whole_and_ranged(s3):
    s3.create_bucket(Bucket="mp-copy")
    source = os.urandom(7 * MiB)
    s3.put_object(Bucket="mp-copy", Key="src.bin", Body=source)
    upload_id = s3.create_multipart_upload(Bucket="mp-copy", Key="dst.bin")["UploadId"]
    whole = s3.upload_part_copy(Bucket="mp-copy", Key="dst.bin", UploadId=upload_id, PartNumber=1,
                                CopySource={"Bucket": "mp-copy", "Key": "src.bin"})["CopyPartResult"]["ETag"]
    assert whole == f'"{hashlib.md5(source).hexdigest()}"'
    ranged = s3.upload_part_copy(Bucket="mp-copy", Key="dst.bin", UploadId=upload_id, PartNumber=2,
                                 CopySource={"Bucket": "mp-copy", "Key": "src.bin"},
                                 CopySourceRange="bytes=100-1099")["CopyPartResult"]["ETag"]
    assert ranged == f'"{hashlib.md5(source[100:1100]).hexdigest()}"'
    s3.complete_multipart_upload(Bucket="mp-copy", Key="dst.bin", UploadId=upload_id, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": whole}, {"PartNumber": 2, "ETag": ranged}]})
    assert s3.get_object(Bucket="mp-copy", Key="dst.bin")["Body"].read() == source + source[100:1100]


def test_boto3_upload_file_and_the_aws_cli_go_multipart_both_ways(s3, server, credentials, tmp_path):
    assert AWS is not None, "the aws CLI is not installed: run make setup"
    s3.create_bucket(Bucket="mp-cli")
    data = os.urandom(20 * MiB + 12345)
    (tmp_path / "in.bin").write_bytes(data)
    config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    s3.upload_file(str(tmp_path / "in.bin"), "mp-cli", "boto3.bin", Config=config)
    assert s3.head_object(Bucket="mp-cli", Key="boto3.bin")["ETag"].endswith('-5"')
    s3.download_file("mp-cli", "boto3.bin", str(tmp_path / "boto3.back"), Config=config)
    assert (tmp_path / "boto3.back").read_bytes() == data
    aws(server, credentials, "s3", "cp", str(tmp_path / "in.bin"), "s3://mp-cli/cli.bin")
    assert s3.head_object(Bucket="mp-cli", Key="cli.bin")["ETag"].endswith('-3"')  # the CLI's 8 MB parts
    aws(server, credentials, "s3", "cp", "s3://mp-cli/cli.bin", str(tmp_path / "cli.back"))
    assert (tmp_path / "cli.back").read_bytes() == data


def test_forget_drops_an_abandoned_uploads_parts_after_the_documented_age(s3, cql):
    """Injects an upload left unfinished and a clock SAFETY.abandoned_upload_s later; checks forget drops every version of
    its parts and record (and keeps a fresh upload's)."""
    s3.create_bucket(Bucket="mp-old")
    upload_id = s3.create_multipart_upload(Bucket="mp-old", Key="left.bin")["UploadId"]
    s3.upload_part(Bucket="mp-old", Key="left.bin", UploadId=upload_id, PartNumber=1, Body=os.urandom(100_000))
    prefix = f"{UPLOADS}mp-old/"
    namespace = Namespace.for_session(cql, require_settings(cql).directory_rows)
    st = Statements.for_session(cql)
    assert forget(cql, namespace, prefix).dropped == []  # young: kept
    report = forget(cql, namespace, prefix, now=time.time() + SAFETY.abandoned_upload_s + 60)
    assert sorted(d.id for d in report.dropped) == [f"{prefix}{upload_id}/00001", f"{prefix}{upload_id}/upload"]
    assert list(entries_under(cql, st, prefix)) == []
    with pytest.raises(ClientError) as err:
        s3.list_parts(Bucket="mp-old", Key="left.bin", UploadId=upload_id)
    assert error_code(err) == "NoSuchUpload"
