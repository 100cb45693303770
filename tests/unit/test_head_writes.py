"""The head writes' retry rule (``store/engine/commit.py`` ``write_heads``), shared by a lone store and a batch.

A fake clock stands in for the commit module's ``time`` (its sleeps move it); ``send`` fakes the node: it answers
the groups that failed with a retryable error.
"""

from __future__ import annotations

from casstor_ops.store.engine import commit as commit_module
from casstor_ops.store.engine.commit import HEAD_WRITE_ATTEMPTS, write_heads
from tests.support import SleepingClock


def test_a_failed_group_alone_is_sent_again_after_a_doubling_pause_behind_the_fence(monkeypatch) -> None:
    clock = SleepingClock()
    monkeypatch.setattr(commit_module, "time", clock)
    sent, fences = [], []

    def send(groups):
        sent.append(groups)
        return [g for g in groups if g == ["b"] and len(sent) < 3]

    written = write_heads([["a"], ["b"]], send, lambda: True, lambda: fences.append(clock.now))
    assert sent == [[["a"], ["b"]], [["b"]], [["b"]]] and len(fences) == 3
    assert clock.slept == [0.2, 0.4] and written.left == [] and written.acknowledged == clock.now


def test_no_group_is_sent_once_the_bound_has_passed(monkeypatch) -> None:
    """Injects a failed first attempt and a bound that passes during the pause: nothing is sent again, and the
    group is answered as not acknowledged because of the bound (its file needs a new version), not as an error."""
    clock = SleepingClock()
    monkeypatch.setattr(commit_module, "time", clock)
    sent = []
    written = write_heads([["a"]], lambda groups: sent.append(groups) or groups, lambda: clock.now < 100.1,
                          lambda: None)
    assert len(sent) == 1 and written.left == [["a"]] and written.timed_out and written.acknowledged is None


def test_attempts_run_out_without_a_pause_after_the_last(monkeypatch) -> None:
    clock = SleepingClock()
    monkeypatch.setattr(commit_module, "time", clock)
    written = write_heads([["a"]], lambda groups: groups, lambda: True, lambda: None)
    assert len(clock.slept) == HEAD_WRITE_ATTEMPTS - 1 and written.left == [["a"]] and not written.timed_out
