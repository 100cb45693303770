"""A small PUT body read whole on the event loop (``BodyReader.read_all``): its chunks, its limit, its timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import uvloop

from casstor_ops.serve.status import BodyTooLarge
from casstor_ops.serve.streams import BodyReader, BodyTimeout, BodyWriter, ResponseClosed


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


def test_a_body_that_trickles_past_its_deadline_is_408() -> None:
    """Injects a body of many chunks, each within the idle timeout, whose whole takes longer than the deadline;
    checks BodyTimeout (408) names the deadline (before: only an idle client was ever ended)."""
    async def trickle() -> AsyncIterator[bytes]:
        for _ in range(50):
            await asyncio.sleep(0.05)
            yield b"x"

    async def run() -> bytes:
        return await BodyReader(trickle(), asyncio.get_running_loop(), idle_timeout_s=1.0, deadline_s=0.5).read_all()
    with pytest.raises(BodyTimeout, match="did not arrive within 0.5 s"):
        asyncio.run(run())


def test_a_deadline_that_fires_early_on_uvloop_is_still_named_the_deadline() -> None:
    """Injects uvloop's early timers (the server's loop: its clock counts milliseconds and is read once an
    iteration, so a wait ends up to a millisecond before the deadline by ``time.monotonic``), by busy work in the
    iteration that starts each wait; checks that every one of 200 stalled bodies with a 10 ms deadline and a 60 s
    idle timeout is a 408 naming the deadline (before: about 7 % named the idle timeout, read off the clock)."""
    async def run() -> list[str]:
        loop, said = asyncio.get_running_loop(), []
        for _ in range(200):
            await asyncio.sleep(0)
            busy = time.monotonic() + 0.003
            while time.monotonic() < busy:
                pass
            try:
                await BodyReader(_chunks([], stall_s=1.0), loop, idle_timeout_s=60.0, deadline_s=0.01).read_all()
            except BodyTimeout as err:
                said.append(str(err))
        return said
    assert set(uvloop.run(run())) == {"the body did not arrive within 0.01 s"}


def test_a_read_ahead_holds_the_first_bytes_for_readinto() -> None:
    """The first bytes read on the event loop come back first from ``readinto``; a body that ended there is
    reported whole."""
    async def run() -> tuple[bool, bool, bytes]:
        reader = BodyReader(_chunks([b"abc", b"def", b"gh"]), asyncio.get_running_loop())
        partly = await reader.read_ahead(4)
        held = reader.held()
        return partly, await reader.read_ahead(), held + b"|" + reader.held()
    assert asyncio.run(run()) == (False, True, b"abcdef|abcdefgh")


def test_a_worker_read_past_the_limit_is_too_large() -> None:
    """Injects a body of 10,000 bytes read by a worker thread 4 KiB at a time (``readinto``, as the store reads a
    streamed PUT) past a limit of 5,000; checks the limit holds there too (BodyTooLarge, not a truncated body)."""
    def drain(reader: BodyReader) -> None:
        buffer = bytearray(4096)
        while reader.readinto(memoryview(buffer)):
            pass

    async def run() -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, drain, BodyReader(_chunks([b"x" * 1000] * 10), loop, limit=5000))
    with pytest.raises(BodyTooLarge):
        asyncio.run(run())


def test_a_reader_that_takes_nothing_for_the_idle_timeout_frees_the_worker() -> None:
    """Injects a response nobody reads (a client too slow to take a chunk); checks the worker's write gives up
    after the idle timeout with ResponseClosed, so its read thread serves others (before: it waited for ever)."""
    async def run() -> None:
        loop = asyncio.get_running_loop()
        writer = BodyWriter(loop, queued=1, idle_timeout_s=0.3)
        filled = loop.run_in_executor(None, writer.fill, lambda out: [out.write(b"x") for _ in range(3)])
        try:
            await asyncio.wait_for(asyncio.shield(filled), 5)  # nobody takes a chunk
        finally:
            writer.close()  # before the fix, only this ended the worker
            await filled
        assert await writer.next() == b"x"
        with pytest.raises(ResponseClosed):
            await writer.next()
    asyncio.run(run())
