"""row_requests.results against a session that records what it was sent and when its answers were awaited."""

from __future__ import annotations

import pytest

from casstor_ops.store.cql.row_requests import results, write_all


class _Future:
    def __init__(self, log: list[str], values: tuple, error: Exception | None) -> None:
        self._log, self._values, self._error = log, values, error

    def result(self):
        self._log.append(f"await {self._values[0]}")
        if self._error is not None:
            raise self._error
        return [self._values]


class _Session:
    """Answers each request with its own values; ``failing`` names the values whose request fails."""

    def __init__(self, failing: int | None = None) -> None:
        self.log: list[str] = []
        self._failing = failing

    def execute_async(self, statement, values, execution_profile=None) -> _Future:
        self.log.append(f"send {values[0]}")
        return _Future(self.log, values, RuntimeError("timed out") if values[0] == self._failing else None)


def test_a_window_is_sent_before_its_first_answer_is_awaited_and_answers_come_in_order():
    session = _Session()
    got = [rows[0][0] for rows in results(session, [("select", (n,)) for n in range(5)], at_once=2)]
    assert got == [0, 1, 2, 3, 4]
    assert session.log == ["send 0", "send 1", "await 0", "await 1", "send 2", "send 3", "await 2", "await 3",
                           "send 4", "await 4"]


def test_the_requests_are_read_a_window_ahead_in_the_callers_thread():
    """A generator of requests is pulled only as windows are sent: nothing past the window in flight."""
    pulled: list[int] = []

    def requests():
        for n in range(4):
            pulled.append(n)
            yield "select", (n,)

    answers = results(_Session(), requests(), at_once=2)
    next(answers)
    assert pulled == [0, 1]


def test_the_first_failure_is_raised_where_it_is_awaited_and_no_later_window_is_sent():
    session = _Session(failing=1)
    answers = results(session, [("insert", (n,)) for n in range(6)], at_once=3)
    assert next(answers) == [(0,)]
    with pytest.raises(RuntimeError, match="timed out"):
        next(answers)
    assert session.log == ["send 0", "send 1", "send 2", "await 0", "await 1"]


def test_write_all_returns_once_every_write_is_acknowledged_and_raises_the_first_failure():
    session = _Session()
    write_all(session, [("insert", (n,)) for n in range(3)])
    assert session.log == ["send 0", "send 1", "send 2", "await 0", "await 1", "await 2"]
    with pytest.raises(RuntimeError, match="timed out"):
        write_all(_Session(failing=2), [("insert", (n,)) for n in range(3)])
