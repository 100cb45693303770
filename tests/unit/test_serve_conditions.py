"""A PUT's preconditions (If-Match / If-None-Match, RFC 9110 13.2.2), the per-key head locks, the body limit."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from casstor_ops.serve.app import Handlers, Policy
from casstor_ops.serve.content_cache import ContentCache
from casstor_ops.serve.head_locks import HeadLocks
from casstor_ops.serve.metrics import Metrics
from casstor_ops.serve.shared_lease import SharedLease, _Lent
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
        with locks.lock_for(key) as lock:
            lock.then(lambda: events.append(f"{name} checks"))()
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

    with pytest.raises(PreconditionFailed), locks.lock_for("k") as lock:
        lock.then(failing)()
    with locks.lock_for("k") as lock:  # would block for ever if the lock were still held
        lock.then(lambda: None)()
    assert len(locks) == 0


def test_a_lock_taken_now_never_waits_for_a_held_lock() -> None:
    """The event loop's take (an inline PUT): free lock taken, held lock refused at once, released with its block."""
    locks = HeadLocks()
    with locks.lock_for("k") as first:
        assert first.take_now()
        with locks.lock_for("k") as second:
            assert not second.take_now()
    with locks.lock_for("k") as third:
        assert third.take_now()
    assert len(locks) == 0


class _Lease:
    """Stands in for a WriterLease whose end (heartbeat join, row delete) waits for ``go_on``."""

    def __init__(self, go_on: threading.Event | None = None) -> None:
        self.go_on = go_on
        self.ended = threading.Event()

    def __exit__(self, *exc: object) -> None:
        if self.go_on is not None:
            self.go_on.wait(30)
        self.ended.set()


def test_a_lease_is_lent_without_waiting_only_when_one_is_fresh() -> None:
    """``hold_if_fresh`` never takes a lease (it would wait for a row write and a Paxos read on the event loop):
    None with no lease or a stale one, even while another write holds the lock to take one; the fresh lease
    otherwise, counted as held until the write ends."""
    leases = SharedLease(session=None, reuse_s=60)  # nothing here may touch the session
    try:
        with leases.hold_if_fresh() as lease:
            assert lease is None
        leases._current = _Lent(_Lease())
        with leases._taking:  # another write taking a lease: the fresh one is still lent at once
            with leases.hold_if_fresh() as lease:
                assert lease is leases._current.lease and leases._current.holders == 1
        assert leases._current.holders == 0
        leases._current.taken -= 120
        with leases.hold_if_fresh() as lease:
            assert lease is None
    finally:
        leases.close()
    assert leases._current is None


def test_the_last_holder_of_a_retired_lease_never_waits_for_its_end() -> None:
    """Injects a lease whose end blocks (as its row delete does with the node frozen), gone stale while a write
    on the event loop holds it (the reaper retires it). Checks the write's end returns at once and the lease is
    ended on the reaper thread once it can be. Before the fix the last holder ended it itself: the event loop
    stood still (no GET, HEAD or /metrics answered) for as long as the delete took."""
    go_on = threading.Event()
    leases = SharedLease(session=None, reuse_s=60)
    lease = _Lease(go_on)
    leases._current = _Lent(lease)
    try:
        with leases.hold_if_fresh() as held:
            assert held is lease
            leases._current.taken -= 120  # stale: the reaper retires it, still held
            deadline = time.monotonic() + 10
            while leases._current is not None and time.monotonic() < deadline:
                time.sleep(0.05)
            started = time.monotonic()
        assert time.monotonic() - started < 0.5
        assert not lease.ended.is_set()
        go_on.set()
        assert lease.ended.wait(10)
    finally:
        go_on.set()
        leases.close()


class _PausingStore:
    """Stands in for a Store whose put stops between its ``before_commit`` (the second If-Match check) and its
    head write until the test lets it go on."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.checked, self.go_on = threading.Event(), threading.Event()

    def put(self, reader: object, key: str, lease: object, before_commit: Callable[[], None]) -> None:
        before_commit()
        self.checked.set()
        self.go_on.wait(10)
        self.events.append("PUT writes the head")

    def remove(self, key: str, lease: object) -> None:
        self.events.append("DELETE removes the file")


def test_a_delete_never_lands_between_a_puts_check_and_its_head_write() -> None:
    """Injects a DELETE of a key while a PUT of it has passed its last precondition check but not yet written its
    head; checks the removal waits for the head write (before it, the PUT would bring the deleted file back)."""
    store, leases = _PausingStore(), SharedLease(session=None)  # no lease is taken: the store calls are direct
    handlers = Handlers(store, leases, Policy(), Metrics(), ContentCache(0, 0))
    try:
        put = threading.Thread(target=handlers.writes._put_body, args=(None, "k", None, None))
        put.start()
        assert store.checked.wait(10)
        delete = threading.Thread(target=handlers.writes._remove, args=("k", None, None))
        delete.start()
        time.sleep(0.2)  # time for the DELETE to run ahead if nothing holds it
        store.go_on.set()
        put.join(), delete.join()
    finally:
        handlers.close()
        leases.close()
    assert store.events == ["PUT writes the head", "DELETE removes the file"]
    assert len(handlers.writes.head_locks) == 0


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
