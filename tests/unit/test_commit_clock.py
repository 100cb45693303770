"""The commit bound against a wall clock that steps (NTP, a manual fix): durations come from the monotonic clock.

A fake clock stands in for the commit module's ``time``: the wall clock jumps by an hour during a step of the
commit, while the monotonic clock moves only as much real time as the step takes. A fake session, window and
statements record the block lists and head rows written.
"""

from __future__ import annotations

from types import SimpleNamespace

from casstor_ops.store.engine import commit as commit_module
from casstor_ops.store.engine.commit import Commit, VerifiedBlocks

HOUR_S = 3600.0
BOUND_S = 300
STATEMENTS = SimpleNamespace(insert_version="insert_version", insert_file_block="insert_file_block")


class FakeNamespace:
    """Records the entries published after each commit."""

    def __init__(self) -> None:
        self.published: list = []

    def publish(self, info, stored_size=None) -> None:
        self.published.append(info.id)


class FakeClock:
    """``time()`` and ``monotonic()`` start together; ``step`` moves real time and may jump the wall clock."""

    def __init__(self) -> None:
        self.wall = self.mono = 1_000_000.0

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def sleep(self, seconds: float) -> None:
        self.step(seconds)

    def step(self, real_s: float, wall_jump_s: float = 0.0) -> None:
        self.mono += real_s
        self.wall += real_s + wall_jump_s


class FakeWindow:
    def __init__(self) -> None:
        self.lists = 0

    def submit_batch(self, statement, rows, on_result) -> None:
        self.lists += statement == "insert_file_block"

    def drain(self) -> None:
        pass


class FakeSession:
    """Records head writes; ``on_head`` runs as each is sent (the time its request takes)."""

    def __init__(self, on_head) -> None:
        self.heads: list[tuple] = []
        self._on_head = on_head

    def execute(self, statement, params) -> None:
        assert statement == "insert_version"
        self._on_head()
        self.heads.append(params)


def run_commit(monkeypatch, clock: FakeClock, list_step, head_step=lambda: None) -> SimpleNamespace:
    """Commit one file of two verified blocks; ``list_step`` runs after each block list is written."""
    monkeypatch.setattr(commit_module, "time", clock)
    monkeypatch.setattr(commit_module, "commit_bound_s", lambda session: BOUND_S)
    verified = {b"a" * 32: clock.monotonic(), b"b" * 32: clock.monotonic()}
    rechecked: list[list[bytes]] = []

    def reverify(hashes, reread) -> None:
        rechecked.append(hashes)
        verified.update(dict.fromkeys(hashes, clock.monotonic()))

    window, session = FakeWindow(), FakeSession(head_step)
    real_list = Commit._write_block_list

    def list_then_step(self, file_id, version) -> None:
        real_list(self, file_id, version)
        list_step()

    monkeypatch.setattr(Commit, "_write_block_list", list_then_step)
    namespace = FakeNamespace()
    commit = Commit(session, window, STATEMENTS, VerifiedBlocks(list(verified), [10, 20], verified, reverify),
                    namespace=namespace)
    commit.run(SimpleNamespace(seekable=lambda: True), "f", 30)
    assert namespace.published == ["f"]  # the entry is written once, after the head
    return SimpleNamespace(heads=session.heads, lists=window.lists, rechecked=rechecked)


def once(action):
    """``action`` the first time only."""
    done: list[bool] = []
    return lambda: done or (done.append(True), action())


def test_a_wall_clock_jump_forward_does_not_abort_a_quick_commit(monkeypatch) -> None:
    """Injects a wall clock jump of an hour forward while the block list is written in 10 ms. Checks that the
    first version commits at once, with no block checked again. With wall-clock durations the version looked
    an hour old: every attempt gave up and the store failed."""
    clock = FakeClock()
    done = run_commit(monkeypatch, clock, once(lambda: clock.step(0.01, HOUR_S)))
    assert (len(done.heads), done.lists, done.rechecked) == (1, 1, [])


def test_a_wall_clock_jump_back_does_not_hide_a_commit_past_its_bound(monkeypatch) -> None:
    """Injects a block list write that takes 400 s (over the 300 s bound) while the wall clock jumps an hour
    back. Checks that the version is not committed: its blocks are checked again and a second version is
    written, whose head is the only one. With wall-clock durations the elapsed time looked negative and the
    first version's head was written with its blocks' checks 400 s old."""
    clock = FakeClock()
    done = run_commit(monkeypatch, clock, once(lambda: clock.step(400.0, -HOUR_S)))
    assert (len(done.heads), done.lists, len(done.rechecked)) == (1, 2, 1)


def test_a_head_acknowledged_late_is_late_whatever_the_wall_clock_says(monkeypatch) -> None:
    """Injects a head write acknowledged 10 s after it was sent (over the bound plus ``SAFETY.late_head_margin_s`` of
    the first attempt, 1 s + 5 s) while the wall clock jumps an hour back. Checks that the store checks every
    block again and writes its block list again (step 4). With wall-clock durations the acknowledgement looked
    early and neither happened."""
    clock = FakeClock()
    done = run_commit(monkeypatch, clock, lambda: None, head_step=lambda: clock.step(10.0, -HOUR_S))
    assert (len(done.heads), done.lists, len(done.rechecked)) == (1, 2, 1)
