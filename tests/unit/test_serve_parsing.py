"""``casstor serve``'s pure logic: keys, ranges, the token, validators, statuses, and the range-cutting body writer."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime

import pytest
from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable

from casstor_ops.errors import (EXIT_USAGE, CasstorError, CorruptionError, FileChangedError, LeaseLapsedError,
                                MaintenanceError, NotFoundError)
from casstor_ops.serve.auth import Token, read_token
from casstor_ops.serve.keys import parse_key
from casstor_ops.serve.ranges import ByteRange, Unsatisfiable, parse_range
from casstor_ops.serve.status import BodyTooLarge, LengthRequired, PreconditionFailed, Status, status_of
from casstor_ops.serve.streams import BodyTimeout, BodyWriter
from casstor_ops.serve.validators import file_headers, not_modified
from casstor_ops.store.records import FileInfo

from ..support import secret_file


@pytest.mark.parametrize("raw, key", [
    (b"/a.txt", "a.txt"),
    (b"/dir/with%20space.txt", "dir/with space.txt"),
    (b"/a%2Fb", "a/b"),
    (b"/caf%C3%A9/%E2%82%AC", "café/€"),
    (b"/a/../b", "a/../b"),  # not resolved: the store refuses it as a new ID, and it is never a path
    (b"/%2E%2E", ".."),
])
def test_a_key_is_the_percent_decoded_path(raw: bytes, key: str) -> None:
    assert parse_key(raw) == key


@pytest.mark.parametrize("raw", [b"/", b"", b"/a%00b", b"/%FF", b"/%C3"])
def test_empty_nul_and_non_utf8_keys_are_usage_errors(raw: bytes) -> None:
    with pytest.raises(CasstorError) as caught:
        parse_key(raw)
    assert caught.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize("header, expected", [
    (None, None),
    ("bytes=0-0", ByteRange(0, 1)),
    ("bytes=10-19", ByteRange(10, 20)),
    ("bytes=90-500", ByteRange(90, 100)),
    ("bytes=90-", ByteRange(90, 100)),
    ("bytes=-5", ByteRange(95, 100)),
    ("bytes=-500", ByteRange(0, 100)),
    ("bytes=0-1,5-6", None),   # several ranges: the whole file
    ("items=0-1", None),       # another unit
    ("bytes=5-2", None),       # invalid: ignored
    ("bytes=-", None),
])
def test_one_range_is_parsed_anything_else_is_the_whole_file(header: str | None, expected) -> None:
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize("header, size", [("bytes=100-", 100), ("bytes=-0", 100), ("bytes=0-", 0), ("bytes=-1", 0)])
def test_a_range_past_the_end_is_unsatisfiable(header: str, size: int) -> None:
    with pytest.raises(Unsatisfiable):
        parse_range(header, size)


def test_content_range_names_the_last_byte_included() -> None:
    assert ByteRange(10, 20).content_range(100) == "bytes 10-19/100"


def test_the_token_needs_the_bearer_scheme_and_the_exact_secret() -> None:
    token = Token(b"s3cret")
    assert token.allows("Bearer s3cret") and token.allows("bearer s3cret")
    for header in (None, "", "s3cret", "Basic s3cret", "Bearer s3cre", "Bearer s3cret2", "Bearer é"):
        assert not token.allows(header), header


def test_the_token_file_is_stripped_and_must_hold_a_printable_token(tmp_path) -> None:
    assert read_token(secret_file(tmp_path / "token", "0600")).allows("Bearer s3cret")
    for index, content in enumerate(("", " \n", "two words")):
        bad = secret_file(tmp_path / f"bad{index}", "0600", content)
        with pytest.raises(CasstorError) as caught:
            read_token(bad)
        assert caught.value.exit_code == EXIT_USAGE
    with pytest.raises(CasstorError, match="missing: No such file or directory"):
        read_token(tmp_path / "missing")


@pytest.mark.parametrize("kind", ["0644", "0640", "directory", "fifo"])
def test_a_token_file_others_may_read_or_that_is_not_a_file_is_refused(tmp_path, kind: str) -> None:
    """Injects a token file open to its group or others, a directory and a FIFO (opening it would wait for a
    writer); checks each is one usage line naming --token-file, before anything is read."""
    path = secret_file(tmp_path / "token", kind)
    with pytest.raises(CasstorError) as caught:
        read_token(path)
    message = str(caught.value)
    assert caught.value.exit_code == EXIT_USAGE and "\n" not in message and "s3cret" not in message
    assert message.startswith(f"--token-file={path}: ")
    assert message.endswith("not a regular file" if kind in ("directory", "fifo") else f"run 'chmod 600 {path}'")


def test_validators_are_the_file_hash_and_the_commit_time_with_the_version() -> None:
    head = FileInfo("a", uuid.uuid1(), 3, bytes(range(32)), 1, datetime(2024, 5, 1, 12, 30, 5))
    headers = file_headers(head)
    assert headers == {"etag": f'"{bytes(range(32)).hex()}"', "last-modified": "Wed, 01 May 2024 12:30:05 GMT",
                       "x-casstor-version": str(head.version)}
    assert not_modified(headers["etag"], headers["etag"])
    assert not_modified(f'"other", W/{headers["etag"]}', headers["etag"])
    assert not_modified("*", headers["etag"])
    assert not not_modified('"other"', headers["etag"]) and not not_modified(None, headers["etag"])


@pytest.mark.parametrize("error, status", [
    (CasstorError("bad ID", EXIT_USAGE), Status(400, kind="bad_request")),
    (NotFoundError("no such file"), Status(404, kind="not_found")),
    (CorruptionError("block damaged"), Status(502, kind="corrupt")),
    (MaintenanceError("offline reclaim window"), Status(503, 5, "window")),
    (LeaseLapsedError("lease may have lapsed"), Status(503, 5, "unavailable")),
    (FileChangedError("changed during restore"), Status(503, 5, "unavailable")),
    (CasstorError("unreachable", 6), Status(503, 5, "unavailable")),
    (CasstorError("not initialised", 9), Status(503, kind="setup")),
    (NoHostAvailable("none up", {}), Status(503, 5, "unavailable")),
    (OperationTimedOut("slow"), Status(503, 5, "unavailable")),
    (BodyTimeout("nothing for 60 s"), Status(408, kind="body_timeout")),
    (BodyTooLarge("too long"), Status(413, kind="too_large")),
    (LengthRequired("chunked"), Status(411, kind="length_required")),
    (PreconditionFailed("moved"), Status(412, kind="precondition")),
    (RuntimeError("a bug"), Status(500)),
    (KeyError("a bug"), Status(500)),
])
def test_each_failure_has_its_status(error: BaseException, status: Status) -> None:
    assert status_of(error) == status


def _written(start: int, stop: int | None, blocks: list[bytes]) -> tuple[bytes, int]:
    """What a BodyWriter sends of ``blocks`` for a range, and how many blocks the producer got to write."""
    async def run() -> tuple[bytes, int]:
        writer = BodyWriter(asyncio.get_running_loop(), start, stop, queued=len(blocks))
        wrote = []

        def produce(out: BodyWriter) -> None:
            for block in blocks:
                wrote.append(out.write(block))

        await asyncio.get_running_loop().run_in_executor(None, writer.fill, produce)
        sent = b""
        while (chunk := await writer.next()) is not None:
            sent += chunk
        return sent, len(wrote)
    return asyncio.run(run())


def test_the_body_writer_sends_the_range_and_stops_the_producer_after_it() -> None:
    blocks = [b"0123", b"4567", b"89ab", b"cdef"]
    assert _written(0, None, blocks) == (b"0123456789abcdef", 4)
    assert _written(5, 10, blocks) == (b"56789", 2)  # the third block's write completes the range: stopped there
    assert _written(4, 8, blocks) == (b"4567", 1)
    assert _written(14, None, blocks) == (b"ef", 4)


def test_the_producers_error_is_raised_on_the_response_side() -> None:
    async def run() -> None:
        writer = BodyWriter(asyncio.get_running_loop())

        def produce(out: BodyWriter) -> None:
            out.write(b"first")
            raise CorruptionError("block damaged")

        await asyncio.get_running_loop().run_in_executor(None, writer.fill, produce)
        assert await writer.next() == b"first"
        with pytest.raises(CorruptionError):
            await writer.next()
    asyncio.run(run())
