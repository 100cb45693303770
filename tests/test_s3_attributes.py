"""S3 tags, checksums, GetObjectAttributes and GetObject ``PartNumber`` through a real ``casstor serve --s3``.

boto3 (real HTTP) against the session's node: what is kept with a version
(its tags, checksum and a multipart object's parts) is read back through
the operations that answer it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib

import pytest
from awscrt import checksums as crt_checksums
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from .s3_support import error_code

MiB = 1024 * 1024


def _sha256(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def _multipart(s3, bucket: str, key: str, parts: list[bytes], **create) -> dict:
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key, **create)["UploadId"]
    listed = []
    for number, data in enumerate(parts, 1):
        extra = {"ChecksumAlgorithm": create["ChecksumAlgorithm"]} if "ChecksumAlgorithm" in create else {}
        etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data,
                              **extra)["ETag"]
        listed.append({"PartNumber": number, "ETag": etag})
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                        MultipartUpload={"Parts": listed})


def test_object_tags_are_kept_with_the_version_and_counted_on_head(s3):
    """Tags from x-amz-tagging at PUT, replaced by PutObjectTagging, counted on HEAD, removed by
    DeleteObjectTagging; an 11th tag or a 129-character key is InvalidTag and changes nothing."""
    s3.create_bucket(Bucket="tags")
    s3.put_object(Bucket="tags", Key="a", Body=b"x", Tagging="b=2&a")
    assert s3.get_object_tagging(Bucket="tags", Key="a")["TagSet"] == [{"Key": "a", "Value": ""},
                                                                       {"Key": "b", "Value": "2"}]
    s3.put_object_tagging(Bucket="tags", Key="a", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert s3.head_object(Bucket="tags", Key="a")["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "1"
    for bad in ([{"Key": str(i), "Value": ""} for i in range(11)], [{"Key": "k" * 129, "Value": ""}]):
        with pytest.raises(ClientError) as err:
            s3.put_object_tagging(Bucket="tags", Key="a", Tagging={"TagSet": bad})
        assert error_code(err) == "InvalidTag"
    assert s3.get_object_tagging(Bucket="tags", Key="a")["TagSet"] == [{"Key": "k", "Value": "v"}]
    s3.copy_object(Bucket="tags", Key="copy", CopySource="tags/a")
    assert s3.get_object_tagging(Bucket="tags", Key="copy")["TagSet"] == [{"Key": "k", "Value": "v"}]
    s3.delete_object_tagging(Bucket="tags", Key="a")
    assert s3.get_object_tagging(Bucket="tags", Key="a")["TagSet"] == []
    assert "x-amz-tagging-count" not in s3.head_object(Bucket="tags", Key="a")["ResponseMetadata"]["HTTPHeaders"]


def test_bucket_tags_are_set_read_and_removed(s3):
    """GetBucketTagging of an untagged bucket is NoSuchTagSet; Put then Get answers the set; Delete removes it."""
    s3.create_bucket(Bucket="btags")
    with pytest.raises(ClientError) as err:
        s3.get_bucket_tagging(Bucket="btags")
    assert error_code(err) == "NoSuchTagSet"
    s3.put_bucket_tagging(Bucket="btags", Tagging={"TagSet": [{"Key": "team", "Value": "data"}]})
    assert s3.get_bucket_tagging(Bucket="btags")["TagSet"] == [{"Key": "team", "Value": "data"}]
    s3.delete_bucket_tagging(Bucket="btags")
    with pytest.raises(ClientError) as err:
        s3.get_bucket_tagging(Bucket="btags")
    assert error_code(err) == "NoSuchTagSet"


def test_a_put_checksum_is_kept_and_answered_with_checksum_mode(s3):
    """A PUT's x-amz-checksum-crc64nvme is checked (a wrong one: BadDigest), kept, and answered on HEAD only with
    x-amz-checksum-mode: ENABLED; GetObjectAttributes answers it with the size and ETag, and both listings name its
    algorithm and type (as S3 does: not its value)."""
    s3.create_bucket(Bucket="sums")
    data = b"A" * 1024
    put = s3.put_object(Bucket="sums", Key="k", Body=data, ChecksumCRC64NVME="Qeh8oXvGiSo=")
    assert put["ChecksumCRC64NVME"] == "Qeh8oXvGiSo="
    assert "ChecksumCRC64NVME" not in s3.head_object(Bucket="sums", Key="k")
    assert s3.head_object(Bucket="sums", Key="k", ChecksumMode="ENABLED")["ChecksumCRC64NVME"] == "Qeh8oXvGiSo="
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket="sums", Key="k", Body=data, ChecksumCRC64NVME="AAAAAAAAAAA=")
    assert error_code(err) == "BadDigest"
    attributes = s3.get_object_attributes(Bucket="sums", Key="k",
                                          ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize"])
    assert attributes["ObjectSize"] == 1024 and attributes["ETag"] == hashlib.md5(data).hexdigest()
    assert attributes["Checksum"] == {"ChecksumCRC64NVME": "Qeh8oXvGiSo=", "ChecksumType": "FULL_OBJECT"}
    assert "ObjectParts" not in attributes
    for listed in (s3.list_objects_v2(Bucket="sums")["Contents"], s3.list_objects(Bucket="sums")["Contents"]):
        assert [(o["Key"], o["ChecksumAlgorithm"], o["ChecksumType"]) for o in listed] == \
            [("k", ["CRC64NVME"], "FULL_OBJECT")]


def test_a_multipart_object_answers_its_composite_checksum_parts_and_part_numbers(s3):
    """A SHA256 upload: Create answers the algorithm, Complete the composite checksum (SHA256 of the parts'
    digests, -N), HEAD with checksum mode the same; GetObjectAttributes pages the parts with their sizes and
    checksums; GET ?partNumber answers that part's bytes, its checksum and the part count; a part past the last
    is InvalidPart, and part 1 of an object of one PUT is all of it."""
    s3.create_bucket(Bucket="mpsums")
    parts = [b"a" * 5 * MiB, b"b" * 5 * MiB, b"c" * MiB]
    created = s3.create_multipart_upload(Bucket="mpsums", Key="k", ChecksumAlgorithm="SHA256")
    assert created["ChecksumAlgorithm"] == "SHA256"
    s3.abort_multipart_upload(Bucket="mpsums", Key="k", UploadId=created["UploadId"])
    done = _multipart(s3, "mpsums", "k", parts, ChecksumAlgorithm="SHA256", Tagging="t=1")
    composite = base64.b64encode(hashlib.sha256(b"".join(
        hashlib.sha256(p).digest() for p in parts)).digest()).decode() + "-3"
    assert done["ChecksumSHA256"] == composite and done["ChecksumType"] == "COMPOSITE"
    assert s3.head_object(Bucket="mpsums", Key="k", ChecksumMode="ENABLED")["ChecksumSHA256"] == composite
    assert s3.get_object_tagging(Bucket="mpsums", Key="k")["TagSet"] == [{"Key": "t", "Value": "1"}]
    page = s3.get_object_attributes(Bucket="mpsums", Key="k", ObjectAttributes=["ObjectParts"], MaxParts=1,
                                    PartNumberMarker=1)["ObjectParts"]
    assert (page["TotalPartsCount"], page["IsTruncated"], page["NextPartNumberMarker"]) == (3, True, 2)
    assert page["Parts"] == [{"PartNumber": 2, "Size": 5 * MiB, "ChecksumSHA256": _sha256(parts[1])}]
    for number, data in enumerate(parts, 1):
        got = s3.get_object(Bucket="mpsums", Key="k", PartNumber=number, ChecksumMode="ENABLED")
        assert got["Body"].read() == data and got["PartsCount"] == 3 and got["ChecksumSHA256"] == _sha256(data)
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="mpsums", Key="k", PartNumber=4)
    assert error_code(err) == "InvalidPart"
    s3.put_object(Bucket="mpsums", Key="one", Body=b"body")
    assert s3.get_object(Bucket="mpsums", Key="one", PartNumber=1)["Body"].read() == b"body"
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="mpsums", Key="one", PartNumber=2)
    assert error_code(err) == "InvalidPart"


def test_a_full_object_crc_of_a_multipart_object_is_its_parts_crcs_combined(s3):
    """A CRC32 FULL_OBJECT upload's checksum is the CRC32 of all its bytes (combined from the parts', no byte
    read again); a Complete naming another is BadDigest and commits nothing."""
    s3.create_bucket(Bucket="fullcrc")
    parts = [b"x" * 5 * MiB, b"y" * 1000]
    whole = base64.b64encode(zlib.crc32(b"".join(parts)).to_bytes(4, "big")).decode()
    done = _multipart(s3, "fullcrc", "k", parts, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    assert (done["ChecksumCRC32"], done["ChecksumType"]) == (whole, "FULL_OBJECT")
    upload_id = s3.create_multipart_upload(Bucket="fullcrc", Key="bad", ChecksumAlgorithm="CRC32",
                                           ChecksumType="FULL_OBJECT")["UploadId"]
    etag = s3.upload_part(Bucket="fullcrc", Key="bad", UploadId=upload_id, PartNumber=1, Body=b"z",
                          ChecksumAlgorithm="CRC32")["ETag"]
    with pytest.raises(ClientError) as err:
        s3.complete_multipart_upload(Bucket="fullcrc", Key="bad", UploadId=upload_id, ChecksumCRC32="AAAAAA==",
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert error_code(err) == "BadDigest"
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket="fullcrc", Key="bad")
    assert err.value.response["Error"]["Code"] == "404"


def test_boto3_uploads_with_crc32c_and_crc64nvme_of_its_own_are_checked_and_kept(s3, tmp_path):
    """boto3 computes CRC32C and CRC64NVME itself (with awscrt, a dependency of ours): a PutObject with
    ChecksumAlgorithm CRC32C, and an upload_file of 16 MiB in 5 MiB parts with CRC64NVME (S3's FULL_OBJECT type:
    the parts' CRCs combined) and with CRC32C (COMPOSITE: a CRC of the parts' CRCs, ``-4``). Checks: each answer's
    checksum is the one computed here over the bytes, HEAD answers it with ChecksumMode, and the bytes come back
    whole. Before, these CRCs were a table in Python (~3 MB/s: 1.7 s a part, holding the server's GIL)."""
    s3.create_bucket(Bucket="crtsums")
    small = os.urandom(300_000)
    put = s3.put_object(Bucket="crtsums", Key="small", Body=small, ChecksumAlgorithm="CRC32C")
    assert put["ChecksumCRC32C"] == _crc("crc32c", small)
    data, source = os.urandom(16 * MiB), tmp_path / "big"
    source.write_bytes(data)
    parts = [data[start:start + 5 * MiB] for start in range(0, len(data), 5 * MiB)]
    config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    for algorithm, expected in (("CRC64NVME", _crc("crc64nvme", data)), ("CRC32C", _crc_of_crcs("crc32c", parts))):
        s3.upload_file(str(source), "crtsums", algorithm, Config=config, ExtraArgs={"ChecksumAlgorithm": algorithm})
        head = s3.head_object(Bucket="crtsums", Key=algorithm, ChecksumMode="ENABLED")
        assert head[f"Checksum{algorithm}"] == expected
        assert s3.get_object(Bucket="crtsums", Key=algorithm)["Body"].read() == data
    answer = s3.get_object(Bucket="crtsums", Key="small", ChecksumMode="ENABLED")
    assert answer["ChecksumCRC32C"] == put["ChecksumCRC32C"] and answer["Body"].read() == small


def _crc(algorithm: str, data: bytes) -> str:
    value = getattr(crt_checksums, algorithm)(data)
    return base64.b64encode(value.to_bytes(8 if algorithm == "crc64nvme" else 4, "big")).decode()


def _crc_of_crcs(algorithm: str, parts: list[bytes]) -> str:
    digests = b"".join(base64.b64decode(_crc(algorithm, part)) for part in parts)
    return f"{_crc(algorithm, digests)}-{len(parts)}"


def test_copies_keep_a_checksum_of_their_bytes(s3):
    """What it injects: copies whose source keeps no checksum the copy can take as it is, an empty object (copied
    by reading its bytes, as an inline one's), a CopyObject asking for SHA256 of a CRC32 source, and parts of a
    CRC32 upload copied from a source with no CRC32 (whole and a range: read) and from one with a CRC32 of all
    its bytes (whole: its block list, no read).
    What it checks: the copy's checksum, answered and kept, is the one of its bytes, and Complete's COMPOSITE
    CRC32 is the parts' (before, such copies kept none, so the upload's object had none either)."""
    s3.create_bucket(Bucket="copysums")
    s3.put_object(Bucket="copysums", Key="empty", Body=b"", ChecksumAlgorithm="CRC32C")
    s3.copy_object(Bucket="copysums", Key="empty-copy", CopySource="copysums/empty")
    head = s3.head_object(Bucket="copysums", Key="empty-copy", ChecksumMode="ENABLED")
    assert head["ChecksumCRC32C"] == _crc("crc32c", b"")
    with_crc, without = os.urandom(5 * MiB), os.urandom(6 * MiB)
    s3.put_object(Bucket="copysums", Key="with-crc", Body=with_crc, ChecksumAlgorithm="CRC32")
    s3.put_object(Bucket="copysums", Key="without", Body=without, ChecksumAlgorithm="SHA256")
    s3.copy_object(Bucket="copysums", Key="sha-copy", CopySource="copysums/with-crc", ChecksumAlgorithm="SHA256")
    head = s3.head_object(Bucket="copysums", Key="sha-copy", ChecksumMode="ENABLED")
    assert head["ChecksumSHA256"] == _sha256(with_crc) and "ChecksumCRC32" not in head
    upload_id = s3.create_multipart_upload(Bucket="copysums", Key="joined", ChecksumAlgorithm="CRC32")["UploadId"]
    sources = [("with-crc", None, with_crc), ("without", f"bytes=0-{5 * MiB - 1}", without[:5 * MiB]),
               ("without", None, without)]
    listed = []
    for number, (key, span, data) in enumerate(sources, 1):
        copied = s3.upload_part_copy(Bucket="copysums", Key="joined", UploadId=upload_id, PartNumber=number,
                                     CopySource=f"copysums/{key}", **({"CopySourceRange": span} if span else {}))
        result = copied["CopyPartResult"]
        assert result["ChecksumCRC32"] == _crc("crc32", data) and result["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
        listed.append({"PartNumber": number, "ETag": result["ETag"], "ChecksumCRC32": result["ChecksumCRC32"]})
    expected = _crc_of_crcs("crc32", [data for _, _, data in sources])
    done = s3.complete_multipart_upload(Bucket="copysums", Key="joined", UploadId=upload_id, ChecksumCRC32=expected,
                                        MultipartUpload={"Parts": listed})  # the object's checksum, not the body's
    assert done["ChecksumCRC32"] == expected
    assert s3.head_object(Bucket="copysums", Key="joined", ChecksumMode="ENABLED")["ChecksumCRC32"] == expected
    assert s3.get_object(Bucket="copysums", Key="joined")["Body"].read() == b"".join(d for _, _, d in sources)


def test_a_tagged_version_dropped_by_its_version_id_leaves_nothing_behind(s3):
    """Injects: tags set on a version after its commit (a later write to its row), then that version dropped by
    DeleteObject(VersionId). Checks: ListObjectVersions answers (no 500) with neither a version nor a marker, and
    DeleteBucket succeeds. Before the fix the drop was stamped at the version's own time, the later tags cell
    outlived it as a row with no hash, and the listing failed on it (as the S3 suite's clean-up did)."""
    s3.create_bucket(Bucket="tag-drop")
    s3.put_object(Bucket="tag-drop", Key="k", Body=os.urandom(100_000))
    s3.put_object_tagging(Bucket="tag-drop", Key="k", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    [version] = s3.list_object_versions(Bucket="tag-drop")["Versions"]
    s3.delete_object(Bucket="tag-drop", Key="k", VersionId=version["VersionId"])
    listed = s3.list_object_versions(Bucket="tag-drop")
    assert listed.get("Versions", []) == [] and listed.get("DeleteMarkers", []) == []
    s3.delete_bucket(Bucket="tag-drop")
