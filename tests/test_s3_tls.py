"""Real S3 clients over HTTPS, where they send every object's bytes as aws-chunked with a trailing checksum.

Over plain HTTP (the other ``tests/test_s3*.py``) botocore, so boto3 and the
aws CLI, signs each body's SHA-256 and sends its CRC32 as a header. Over
HTTPS, botocore's default since its flexible checksums, a PutObject or
UploadPart body is ``Content-Encoding: aws-chunked`` with
``x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER`` and the CRC32 in
a trailer after the last chunk (``x-amz-trailer: x-amz-checksum-crc32``):
the framing of most users' uploads, which the server's unit tests check
against the S3 documentation's examples and these tests drive with the
clients themselves. One ``casstor serve --s3 --cert --key`` process with a
certificate openssl makes; boto3 (``verify``), the aws CLI
(``AWS_CA_BUNDLE``) and rclone (``--ca-cert``) trust it by its file.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from casstor_ops.serve.process import ServerProcess

from .s3_support import RCLONE, aws, client, client_tree, error_code, rclone
from .serve_support import self_signed_certificate

MiB = 1024 * 1024
CHUNKED = ("STREAMING-UNSIGNED-PAYLOAD-TRAILER", "aws-chunked", "x-amz-checksum-crc32")  # the framing botocore sends
UPLOADS = ("PutObject", "UploadPart")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_server(cql, credentials: Path, certificate: tuple[Path, Path]) -> Iterator[ServerProcess]:
    cert, key = certificate
    running = ServerProcess("--s3", "--s3-credentials", str(credentials), "--cert", str(cert), "--key", str(key))
    assert running.scheme == "https"
    yield running
    code, log = running.stop()
    print(log)  # shown with a failure
    assert code == 0, log


@pytest.fixture(scope="module")
def s3_tls(tls_server: ServerProcess, certificate: tuple[Path, Path]):
    return client(tls_server, ca=certificate[0])


@contextlib.contextmanager
def before_each_upload(s3, hook: Callable[..., None]) -> Iterator[None]:
    """``hook(request, event_name)`` run on each PutObject and UploadPart request of ``s3`` as it is sent, inside
    the block only."""
    for operation in UPLOADS:
        s3.meta.events.register(f"before-send.s3.{operation}", hook)
    try:
        yield
    finally:
        for operation in UPLOADS:
            s3.meta.events.unregister(f"before-send.s3.{operation}", hook)


def framing_of(request) -> tuple[str, ...]:
    """A request's framing as sent: its payload hash, content encoding and trailer."""
    return tuple((request.headers.get(name) or b"").decode()
                 for name in ("x-amz-content-sha256", "Content-Encoding", "x-amz-trailer"))


def crc32_of(data: bytes) -> str:
    """S3's ChecksumCRC32 of ``data``: the big-endian CRC32 in base64."""
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


class FlipOneByte:
    """The framed body botocore made, with one byte of the first chunk's data changed on the way: its CRC32 trailer
    was computed from the bytes before the change, as a flipped bit on the wire would leave it."""

    def __init__(self, body) -> None:
        self._body = body
        self._flipped = False

    def read(self, size: int = -1) -> bytes:
        data = self._body.read(size)
        if not self._flipped and len(data) > 200:  # past the first chunk's size line ("10000\r\n"): its data
            self._flipped = True
            data = data[:100] + bytes([data[100] ^ 0x01]) + data[101:]
        return data

    def __getattr__(self, name: str):
        return getattr(self._body, name)


def test_boto3_over_https_sends_aws_chunked_bodies_with_a_crc32_trailer_and_they_round_trip(s3_tls, tmp_path):
    """Injects nothing: boto3's own default framing over HTTPS. Checks each upload was sent aws-chunked with the
    CRC32 trailer, that every object reads back byte-exact, and that the trailer's CRC32 is kept and answered."""
    s3_tls.create_bucket(Bucket="tls")
    sent: list[tuple[str, tuple[str, ...]]] = []
    whole, streamed = os.urandom(3 * MiB + 7), os.urandom(200_000)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(12 * MiB + 5))
    with before_each_upload(s3_tls, lambda request, event_name, **_: sent.append(
            (event_name.rsplit(".", 1)[1], framing_of(request)))):
        s3_tls.put_object(Bucket="tls", Key="whole", Body=whole)
        s3_tls.put_object(Bucket="tls", Key="dir/streamed", Body=io.BytesIO(streamed))
        s3_tls.upload_file(str(big), "tls", "big", Config=TransferConfig(multipart_threshold=5 * MiB,
                                                                           multipart_chunksize=5 * MiB))
    assert [operation for operation, _ in sent] == ["PutObject", "PutObject"] + ["UploadPart"] * 3
    assert {framing for _, framing in sent} == {CHUNKED}
    for key, data in (("whole", whole), ("dir/streamed", streamed), ("big", big.read_bytes())):
        assert s3_tls.get_object(Bucket="tls", Key=key)["Body"].read() == data, key
    head = s3_tls.head_object(Bucket="tls", Key="whole", ChecksumMode="ENABLED")
    assert head["ChecksumCRC32"] == crc32_of(whole)
    assert head["ETag"] == f'"{hashlib.md5(whole).hexdigest()}"'
    assert s3_tls.head_object(Bucket="tls", Key="big")["ETag"].endswith('-3"')


def test_a_chunked_body_changed_on_the_way_is_bad_digest_and_the_object_stays_as_it_was(s3_tls):
    """Injects: one byte of a PutObject's and of an UploadPart's aws-chunked data flipped after boto3 framed it (its
    CRC32 trailer is of the bytes before). Checks: each is BadDigest, the key still reads its earlier bytes, and the
    upload holds no part; with the trailer's check skipped, the PutObject would store the changed bytes."""
    s3_tls.create_bucket(Bucket="tls-flip")
    before, after = os.urandom(300_000), os.urandom(300_000)
    s3_tls.put_object(Bucket="tls-flip", Key="k", Body=before)
    upload = s3_tls.create_multipart_upload(Bucket="tls-flip", Key="parted")["UploadId"]

    def flip(request, **_) -> None:
        request.body = FlipOneByte(request.body)

    with before_each_upload(s3_tls, flip):
        with pytest.raises(ClientError) as refused:
            s3_tls.put_object(Bucket="tls-flip", Key="k", Body=io.BytesIO(after))
        assert error_code(refused) == "BadDigest"
        with pytest.raises(ClientError) as refused_part:
            s3_tls.upload_part(Bucket="tls-flip", Key="parted", UploadId=upload, PartNumber=1, Body=io.BytesIO(after))
        assert error_code(refused_part) == "BadDigest"
    assert s3_tls.get_object(Bucket="tls-flip", Key="k")["Body"].read() == before
    assert s3_tls.list_parts(Bucket="tls-flip", Key="parted", UploadId=upload).get("Parts", []) == []
    s3_tls.abort_multipart_upload(Bucket="tls-flip", Key="parted", UploadId=upload)


def test_the_aws_cli_and_rclone_sync_a_tree_in_and_out_over_https(tls_server, s3_tls, credentials, certificate,
                                                                     tmp_path):
    """Injects nothing: ``aws s3 sync`` (aws-chunked over HTTPS, its 8 MiB multipart threshold) and ``rclone sync``
    both ways. Checks every file comes back byte-exact and ``rclone check`` (sizes and MD5s) finds no difference."""
    assert RCLONE is not None, "rclone is not installed (Debian's package rclone)"
    cert = certificate[0]
    s3_tls.create_bucket(Bucket="tls-tree")
    files = client_tree(tmp_path / "in")
    aws(tls_server, credentials, "s3", "sync", str(tmp_path / "in"), "s3://tls-tree/aws/", ca=cert)
    aws(tls_server, credentials, "s3", "sync", "s3://tls-tree/aws/", str(tmp_path / "aws-out"), ca=cert)
    for args in (("sync", str(tmp_path / "in"), "cas:tls-tree/rclone"),
                 ("check", str(tmp_path / "in"), "cas:tls-tree/rclone"),
                 ("sync", "cas:tls-tree/rclone", str(tmp_path / "rclone-out"))):
        done = rclone(tls_server, *args, ca=cert)
        assert done.returncode == 0, done.stderr
        if args[0] == "check":
            assert "0 differences found" in done.stderr, done.stderr
    for out in ("aws-out", "rclone-out"):
        for name, data in files.items():
            assert (tmp_path / out / name).read_bytes() == data, (out, name)
