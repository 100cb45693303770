"""The S3 face's pure logic of checksums and tags: CRC64NVME, CRC combination, multipart checksums, tag rules."""

from __future__ import annotations

import base64
import hashlib
import io
import zlib

import pytest

from casstor_ops.serve.s3.checksums import (CHECKSUMS, COMPOSITE, FULL_OBJECT, Checksum, Digests, checksum_type,
                                            combine_crc, multipart_checksum)
from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.tags import tag_set, tags_of_header


def _b64(algorithm: str, data: bytes) -> str:
    digest = CHECKSUMS[algorithm]()
    digest.update(data)
    return base64.b64encode(digest.digest()).decode()


def test_crc64nvme_matches_its_check_value_and_the_s3_suite():
    """The CRC-64/NVME catalogue check value of b'123456789', and the value the S3 suite expects of 1024 'A's."""
    assert base64.b64decode(_b64("crc64nvme", b"123456789")).hex() == "ae8b14860a799888"
    assert _b64("crc64nvme", b"A" * 1024) == "Qeh8oXvGiSo="


@pytest.mark.parametrize("algorithm, check", [("crc32", "cbf43926"), ("crc32c", "e3069283")])
def test_crc32_and_crc32c_match_their_check_values(algorithm, check):
    """The catalogue check values of b'123456789' (CRC-32/ISO-HDLC, CRC-32/ISCSI)."""
    assert base64.b64decode(_b64(algorithm, b"123456789")).hex() == check


@pytest.mark.parametrize("algorithm", ["crc32", "crc32c", "crc64nvme"])
def test_a_body_read_in_pieces_has_the_crc_of_its_whole(algorithm):
    """Digests feeds each CRC one read at a time, from views into the store's buffer: the value is the whole's."""
    data = bytes(range(256)) * 4099
    digests = Digests(io.BytesIO(data), {f"x-amz-checksum-{algorithm}": _b64(algorithm, data)})
    buffer = bytearray(7777)
    while digests.readinto(memoryview(buffer)):
        pass
    digests.check()
    assert digests.checksum().value == _b64(algorithm, data)


@pytest.mark.parametrize("algorithm", ["crc32", "crc32c", "crc64nvme"])
def test_combined_crcs_are_the_crc_of_the_concatenation(algorithm):
    first, second = b"the first part, ", b"and the second one" * 7
    crc = [int.from_bytes(base64.b64decode(_b64(algorithm, part)), "big") for part in (first, second)]
    assert combine_crc(algorithm, crc[0], crc[1], len(second)) == \
        int.from_bytes(base64.b64decode(_b64(algorithm, first + second)), "big")


def test_multipart_checksums_full_object_and_composite():
    parts = [b"a" * 100, b"b" * 7, b"c"]
    layout = [(len(p), _b64("crc32", p)) for p in parts]
    whole = base64.b64encode(zlib.crc32(b"".join(parts)).to_bytes(4, "big")).decode()
    assert multipart_checksum("crc32", FULL_OBJECT, layout) == Checksum("crc32", whole, FULL_OBJECT)
    layout = [(len(p), _b64("sha256", p)) for p in parts]
    composite = hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in parts)).digest()
    assert multipart_checksum("sha256", COMPOSITE, layout).value == base64.b64encode(composite).decode() + "-3"


def test_checksum_types_default_and_refused_pairs():
    assert checksum_type("crc64nvme", None) == FULL_OBJECT
    assert checksum_type("sha256", None) == COMPOSITE
    assert checksum_type("crc32", "full_object") == FULL_OBJECT
    for algorithm, kind in (("sha256", "FULL_OBJECT"), ("crc64nvme", "COMPOSITE"), ("md4", None)):
        with pytest.raises(S3Error, match="not supported"):
            checksum_type(algorithm, kind)


def test_a_checksum_round_trips_through_its_stored_form():
    checksum = Checksum("sha256", "abc=-3", COMPOSITE)
    assert Checksum.parse(checksum.stored()) == checksum and Checksum.parse(None) is None
    assert checksum.fields() == {"ChecksumSHA256": "abc=-3", "ChecksumType": "COMPOSITE"}


def test_digests_compute_an_algorithm_the_request_did_not_name():
    digests = Digests(io.BytesIO(b"hello"), {}, also="sha256")
    assert digests.read() == b"hello"
    digests.check()
    assert digests.checksum() is None
    assert digests.checksum("sha256").value == base64.b64encode(hashlib.sha256(b"hello").digest()).decode()


def test_tag_rules():
    """The header form (a key alone has value ''), and S3's limits: 10 tags, keys 1-128, values 0-256, once each."""
    assert tags_of_header("foo=bar&bar") == {"foo": "bar", "bar": ""}
    assert tags_of_header(None) == {}
    body = b"<Tagging><TagSet>" + b"".join(b"<Tag><Key>%d</Key><Value>v</Value></Tag>" % i for i in range(11)) + \
        b"</TagSet></Tagging>"
    for bad in (lambda: tag_set(body), lambda: tags_of_header("k" * 129 + "=v"),
                lambda: tags_of_header("k=" + "v" * 257), lambda: tags_of_header("a=1&a=2"),
                lambda: tags_of_header("=v")):
        with pytest.raises(S3Error) as err:
            bad()
        assert err.value.code == "InvalidTag"
    assert len(tag_set(body, limit=50)) == 11
