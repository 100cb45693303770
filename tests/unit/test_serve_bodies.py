"""A small PUT body read whole on the event loop (``BodyReader.read_all``): its chunks, its limit, its timeout."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from casstor_ops.serve.status import BodyTooLarge
from casstor_ops.serve.streams import BodyReader, BodyTimeout


async def _chunks(parts: list[bytes], stall_s: float = 0.0) -> AsyncIterator[bytes]:
    for part in parts:
        yield part
    await asyncio.sleep(stall_s)  # a client that stops sending before the end of its body


def _read_all(parts: list[bytes], stall_s: float = 0.0, **options: object) -> bytes:
    async def run() -> bytes:
        return await BodyReader(_chunks(parts, stall_s), asyncio.get_running_loop(), **options).read_all()
    return asyncio.run(run())


def test_the_chunks_are_joined() -> None:
    assert _read_all([b"ab", b"", b"cd"]) == b"abcd"
    assert _read_all([]) == b""


def test_a_body_past_the_limit_is_too_large() -> None:
    assert _read_all([b"abc", b"de"], limit=5) == b"abcde"
    with pytest.raises(BodyTooLarge):
        _read_all([b"abc", b"def"], limit=5)


def test_a_client_that_sends_nothing_for_the_idle_timeout_is_408() -> None:
    """Injects a body that stalls after its first chunk; checks that the wait ends with BodyTimeout (408)."""
    with pytest.raises(BodyTimeout):
        _read_all([b"abc"], stall_s=5.0, idle_timeout_s=0.2)
