"""The claims protocol against a fake request queue over an in-memory block_claims / existing_blocks."""

from __future__ import annotations

import uuid
from collections import deque
from types import SimpleNamespace

import pytest

from casstor_ops.store.blocks import claims as claims_module
from casstor_ops.store.blocks.claims import AWAIT_FIRST_S, CLAIM_PARTITIONS, Claims
from casstor_ops.store.blocks.existence import ExistenceChecks
from casstor_ops.store.coordination.safety import SAFETY
from tests.support import SleepingClock

STATEMENTS = SimpleNamespace(existing="existing", claim_block="claim_block", release_claim="release_claim")


class FakeWindow:
    """Requests answer in submission order, one per poll, from a tiny model of the two tables.

    Like the real requests: ``settle`` lets what is in flight reach the server but runs no handler.
    """

    def __init__(self) -> None:
        self.claims: dict[bytes, uuid.UUID] = {}   # block_claims: hash -> writer
        self.indexed: set[bytes] = set()           # existing_blocks
        self.submitted: list[str] = []              # every statement submitted, in order
        self._in_flight: deque = deque()

    @property
    def busy(self) -> bool:
        return bool(self._in_flight)

    def submit(self, statement, params, on_result) -> None:
        self.submitted.append(statement)
        self._in_flight.append((statement, params, on_result))

    def submit_batch(self, statement, rows, on_result) -> None:
        self.submit(statement, rows, on_result)

    def poll(self, block: bool = True) -> bool:
        if not self._in_flight:
            return False
        statement, params, on_result = self._in_flight.popleft()
        on_result(self._apply(statement, params))
        return True

    def drain(self) -> None:
        while self.poll():
            pass

    def cancel(self) -> None:
        """Nothing waits unsent here: every request is in flight as soon as it is submitted."""

    def settle(self, timeout_s: float) -> bool:
        while self._in_flight:
            statement, params, _ = self._in_flight.popleft()
            self._apply(statement, params)  # the server applies it; its answer is dropped
        return True

    def _apply(self, statement: str, params):
        if statement == "existing":
            hashes, limit = params
            return [(digest,) for digest in hashes if digest in self.indexed][:limit]
        if statement == "claim_block":  # a conditional batch: all or nothing
            assert all(ttl == SAFETY.claim_ttl_s for _, _, _, ttl in params)
            existing = [(False, partition, digest, self.claims[digest]) for partition, digest, _, _ in params
                        if digest in self.claims]
            if existing:
                return existing
            self.claims.update((digest, writer) for _, digest, writer, _ in params)
            return [(True,)]
        assert statement == "release_claim"
        for _, digest, writer in params:
            if self.claims.get(digest) == writer:
                del self.claims[digest]
        return [(True,)]


def block(partition: int, n: int) -> bytes:
    """A hash in claims partition ``partition`` (the first byte modulo CLAIM_PARTITIONS)."""
    return bytes([partition]) + n.to_bytes(31, "big")


@pytest.fixture()
def requests() -> FakeWindow:
    return FakeWindow()


@pytest.fixture()
def clock(monkeypatch) -> SleepingClock:
    fake = SleepingClock()
    monkeypatch.setattr(claims_module, "time", fake)
    return fake


@pytest.fixture()
def pauses(clock) -> list[float]:
    return clock.slept


class Harness:
    def __init__(self, requests: FakeWindow, on_claimed=None) -> None:
        self.found: list[bytes] = []
        self.claimed: list[bytes] = []
        checks = ExistenceChecks(requests, STATEMENTS, on_found=lambda digest, sent: self.found.append(digest))
        self.claims = Claims(requests, STATEMENTS, checks, on_claimed=on_claimed or self.claimed.append)


def test_applied_claims_are_uploaded(requests):
    h = Harness(requests)
    blocks = [block(b, n) for b in (0, 1, CLAIM_PARTITIONS - 1) for n in range(3)]
    h.claims.claim(blocks)
    assert requests.submitted == ["claim_block"] * 3  # one conditional batch per claims partition
    requests.drain()
    assert sorted(h.claimed) == sorted(blocks)
    assert requests.claims == {digest: h.claims.writer for digest in blocks}
    assert not h.claims.awaiting


def test_a_block_another_writer_claimed_is_awaited_then_checked_again(requests, pauses):
    h = Harness(requests)
    theirs, mine = block(3, 1), block(3, 2)
    other = uuid.uuid4()
    requests.claims[theirs] = other
    h.claims.claim([theirs, mine])
    requests.drain()
    assert h.claimed == [mine]  # the rest of the batch claimed again without the other writer's block
    assert h.claims.awaiting

    h.claims.check_awaited()  # not indexed yet, claim still held: awaited again, a longer pause
    requests.drain()
    h.claims.check_awaited()
    requests.drain()
    assert pauses == pytest.approx([AWAIT_FIRST_S, 2 * AWAIT_FIRST_S]) and h.claims.awaiting

    requests.indexed.add(theirs)  # the other writer finished
    h.claims.check_awaited()
    requests.drain()
    assert h.found == [theirs] and h.claimed == [mine] and not h.claims.awaiting


def test_a_pause_counts_from_when_the_block_was_found_claimed_not_from_the_check(requests, clock):
    """A store checks awaited blocks when it has nothing else to do: one found claimed long before is checked at
    once, and the next check of it still waits the doubled pause."""
    h = Harness(requests)
    theirs = block(2, 1)
    requests.claims[theirs] = uuid.uuid4()
    h.claims.claim([theirs])
    requests.drain()
    clock.advance(0.5)  # the store went on cutting and uploading the rest of its file
    h.claims.check_awaited()
    requests.drain()
    assert clock.slept == [] and h.claims.awaiting  # checked without sleeping; still the other writer's
    h.claims.check_awaited()
    assert clock.slept == pytest.approx([2 * AWAIT_FIRST_S])


def test_a_block_whose_claim_expired_unindexed_is_claimed_again(requests, pauses):
    h = Harness(requests)
    digest = block(5, 1)
    requests.claims[digest] = uuid.uuid4()
    h.claims.claim([digest])
    requests.drain()
    del requests.claims[digest]  # the other writer died; its claim expired
    h.claims.check_awaited()
    requests.drain()
    assert h.claimed == [digest] and requests.claims[digest] == h.claims.writer


def test_our_own_claims_from_a_timed_out_retried_batch_are_recognised(requests):
    h = Harness(requests)
    first, second = block(7, 1), block(7, 2)
    requests.claims[first] = h.claims.writer  # a first attempt timed out on the client but was applied
    h.claims.claim([first, second])
    requests.drain()
    assert sorted(h.claimed) == sorted([first, second])
    assert not h.claims.awaiting
    assert requests.submitted == ["claim_block", "claim_block"]  # the second one without our own block


def test_a_failing_store_releases_every_claim_even_with_answers_in_flight(requests):
    """Three claim batches in flight; the store fails while handling the second answer; the third answer
    arrives late (after the failure). Every claim but the indexed block's is released, and nothing but
    releases is submitted after the failure."""
    handled: list[bytes] = []

    def upload(digest: bytes) -> None:
        if handled:
            raise KeyboardInterrupt  # Ctrl-C during the second batch's answer
        handled.append(digest)

    h = Harness(requests, on_claimed=upload)
    indexed = block(0, 1)
    held_by_other = block(2, 9)
    requests.claims[held_by_other] = other = uuid.uuid4()
    h.claims.claim([indexed, block(1, 1), block(1, 2), block(2, 1), held_by_other])
    assert requests.poll() and handled == [indexed]
    h.claims.indexed([indexed])
    with pytest.raises(KeyboardInterrupt):
        requests.drain()
    failed_at = len(requests.submitted)

    h.claims.release()

    assert requests.claims == {indexed: h.claims.writer, held_by_other: other}
    assert requests.submitted[failed_at:] and set(requests.submitted[failed_at:]) == {"release_claim"}
