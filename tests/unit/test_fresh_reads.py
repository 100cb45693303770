"""Fresh reads, shared (serve/fresh_reads.py): concurrent callers share a read, none gets one sent before it asked."""

from __future__ import annotations

import asyncio

import pytest

from casstor_ops.serve.fresh_reads import FreshReads


class Row:
    """A row whose reads are answered when the test says, each with the row's value when the read was sent."""

    def __init__(self) -> None:
        self.value = 0
        self.sent: list[asyncio.Future] = []

    async def read(self, key: str) -> tuple[str, int]:
        answer = asyncio.get_running_loop().create_future()
        self.sent.append(answer)
        value = self.value  # what the node holds when the read arrives
        await answer
        return key, value

    async def answer_next(self) -> None:
        """Answer the oldest read in flight, once one is, and let its callers run."""
        while not self.sent:
            await asyncio.sleep(0)
        self.sent.pop(0).set_result(None)
        for _ in range(5):
            await asyncio.sleep(0)


def test_callers_that_ask_at_once_share_one_read() -> None:
    async def run():
        row = Row()
        reads = FreshReads(row.read)
        callers = [asyncio.ensure_future(reads.get("b")) for _ in range(10)]
        await row.answer_next()
        return [c.result() for c in callers], len(row.sent)

    answers, still_sent = asyncio.run(run())
    assert answers == [("b", 0)] * 10
    assert still_sent == 0  # one read served all ten


def test_a_caller_that_asks_while_a_read_is_in_flight_waits_for_a_read_sent_after_it() -> None:
    """Injects: the row changes while a read is in flight, and a caller asks then. Checks: that caller gets the
    new value (the next read, sent after it asked), never the in-flight read's older answer; those who asked
    meanwhile share that next read."""
    async def run():
        row = Row()
        reads = FreshReads(row.read)
        first = asyncio.ensure_future(reads.get("b"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert len(row.sent) == 1  # the first read is in flight
        row.value = 1              # the bucket changes; then two more requests come
        later = [asyncio.ensure_future(reads.get("b")) for _ in range(2)]
        await row.answer_next()
        assert first.done() and not any(c.done() for c in later)
        await row.answer_next()
        return first.result(), [c.result() for c in later]

    first, later = asyncio.run(run())
    assert first == ("b", 0)
    assert later == [("b", 1), ("b", 1)]


def test_keys_are_read_apart() -> None:
    async def run():
        row = Row()
        reads = FreshReads(row.read)
        a, b = asyncio.ensure_future(reads.get("a")), asyncio.ensure_future(reads.get("b"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        sent = len(row.sent)
        await row.answer_next()
        await row.answer_next()
        return sent, a.result(), b.result()

    assert asyncio.run(run()) == (2, ("a", 0), ("b", 0))


def test_a_failed_read_fails_the_callers_that_shared_it_and_the_next_caller_reads_again() -> None:
    async def run():
        calls = []

        async def read(key):
            calls.append(key)
            await asyncio.sleep(0)
            if len(calls) == 1:
                raise TimeoutError("read timed out")
            return "row"

        reads = FreshReads(read)
        shared = await asyncio.gather(reads.get("b"), reads.get("b"), return_exceptions=True)
        return shared, await reads.get("b"), len(calls)

    shared, again, calls = asyncio.run(run())
    assert [type(e) for e in shared] == [TimeoutError, TimeoutError]
    assert again == "row" and calls == 2


def test_a_cancelled_caller_leaves_the_read_to_the_others() -> None:
    async def run():
        row = Row()
        reads = FreshReads(row.read)
        gone, stays = asyncio.ensure_future(reads.get("b")), asyncio.ensure_future(reads.get("b"))
        await asyncio.sleep(0)
        gone.cancel()
        await row.answer_next()
        return gone.cancelled(), stays.result()

    assert asyncio.run(run()) == (True, ("b", 0))


def test_a_read_cancelled_with_the_loop_cancels_its_callers() -> None:
    async def run():
        async def read(key):
            raise asyncio.CancelledError

        reads = FreshReads(read)
        with pytest.raises(asyncio.CancelledError):
            await reads.get("b")

    asyncio.run(run())


def test_a_read_cancelled_before_it_began_does_not_stop_the_next_caller() -> None:
    """Injects: the read's task cancelled before its first step (as the loop cancels every task when a server
    stops). Checks: a later caller of that key still gets its read (before, the key stayed marked in flight and
    every later caller waited for ever)."""
    async def run():
        async def read(key):
            return "row"

        reads = FreshReads(read)
        first = asyncio.ensure_future(reads.get("b"))
        await asyncio.sleep(0)  # first has asked: the read's task is made, not begun
        for task in asyncio.all_tasks():
            if task not in (asyncio.current_task(), first):
                task.cancel()
        first.cancel()
        await asyncio.sleep(0)
        return await asyncio.wait_for(reads.get("b"), 2)

    assert asyncio.run(run()) == "row"
