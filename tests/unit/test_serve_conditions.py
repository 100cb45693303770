"""A PUT's preconditions (If-Match / If-None-Match, RFC 9110 13.2.2), the per-key head locks, the body limit."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from casstor_ops.serve.head_locks import HeadLocks
from casstor_ops.serve.status import BodyTooLarge, PreconditionFailed
from casstor_ops.serve.streams import BodyReader
from casstor_ops.serve.validators import WritePrecondition

CURRENT = '"aa"'


@pytest.mark.parametrize("if_match, if_none_match, current, holds", [
    ('"aa"', None, CURRENT, True),
    ('"bb", "aa"', None, CURRENT, True),
    ('"bb"', None, CURRENT, False),
    ('W/"aa"', None, CURRENT, False),      # If-Match compares strongly: a weak tag never matches
    ("*", None, CURRENT, True),
    ("*", None, None, False),              # If-Match: * needs an existing file
    ('"aa"', None, None, False),
    (None, "*", None, True),               # create only: no file yet
    (None, "*", CURRENT, False),
    (None, 'W/"aa"', CURRENT, False),      # If-None-Match compares weakly
    (None, '"bb"', CURRENT, True),
    (None, '"aa"', None, True),
    ('"aa"', "*", CURRENT, True),          # If-Match is evaluated, If-None-Match then ignored
])
def test_a_write_precondition_follows_rfc_9110(if_match, if_none_match, current, holds) -> None:
    assert WritePrecondition.of(if_match, if_none_match).holds(current) is holds


def test_no_header_is_no_precondition_and_a_failure_is_412() -> None:
    assert WritePrecondition.of(None, None) is None
    with pytest.raises(PreconditionFailed, match="'a/b' has ETag \"aa\"") as caught:
        WritePrecondition.of('"bb"', None).check(CURRENT, "a/b")
    assert caught.value.status.code == 412
    with pytest.raises(PreconditionFailed, match="does not exist"):
        WritePrecondition.of("*", None).check(None, "a/b")


def test_the_head_lock_orders_the_check_and_the_write_of_one_key() -> None:
    """Two PUTs of one key: the second's check waits until the first's put returned; other keys do not wait."""
    locks, events = HeadLocks(), []

    def put(key: str, name: str, hold_s: float) -> None:
        with locks.turn(key) as turn:
            turn.then(lambda: events.append(f"{name} checks"))()
            time.sleep(hold_s)  # the head write
            events.append(f"{name} written")

    first = threading.Thread(target=put, args=("k", "first", 0.3))
    first.start()
    time.sleep(0.05)
    other = threading.Thread(target=put, args=("other", "other", 0))
    second = threading.Thread(target=put, args=("k", "second", 0))
    other.start(), second.start()
    for thread in (first, other, second):
        thread.join()
    assert events.index("first written") < events.index("second checks")
    assert events.index("other written") < events.index("first written")
    assert len(locks) == 0  # no lock outlives its PUTs


def test_a_failed_check_releases_the_lock() -> None:
    locks = HeadLocks()

    def failing() -> None:
        raise PreconditionFailed("moved")

    with pytest.raises(PreconditionFailed), locks.turn("k") as turn:
        turn.then(failing)()
    with locks.turn("k") as turn:  # would block for ever if the lock were still held
        turn.then(lambda: None)()
    assert len(locks) == 0


def _read_all(chunks: list[bytes], limit: int | None) -> bytes:
    async def body():
        for chunk in chunks:
            yield chunk

    async def run() -> bytes:
        reader = BodyReader(body(), asyncio.get_running_loop(), limit=limit)
        return await asyncio.get_running_loop().run_in_executor(None, reader.read)
    return asyncio.run(run())


def test_a_body_is_refused_as_soon_as_it_grows_past_the_limit() -> None:
    assert _read_all([b"12345", b"67890"], limit=10) == b"1234567890"
    with pytest.raises(BodyTooLarge, match="10 bytes"):
        _read_all([b"12345", b"67890", b"x"], limit=10)
    assert _read_all([b"x" * 100], limit=None) == b"x" * 100
