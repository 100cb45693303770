"""``cluster.tools.run_tool``: every way an external tool fails is one CasstorError line, never a traceback."""

from __future__ import annotations

import time

import pytest

from casstor_ops.cluster.tools import run_tool
from casstor_ops.errors import CasstorError


def test_a_tool_that_succeeds_gives_its_output(tmp_path) -> None:
    assert run_tool(["sh", "-c", "pwd; echo noise >&2"], "pwd", timeout=30, cwd=tmp_path) == f"{tmp_path}\n"


def test_a_missing_binary_is_one_line_with_the_install_advice() -> None:
    with pytest.raises(CasstorError) as caught:
        run_tool(["/nonexistent/openssl", "req"], "openssl req", timeout=30, install="apt-get install openssl")
    assert str(caught.value) == ("openssl req: cannot run /nonexistent/openssl: No such file or directory: "
                                 "install it with 'apt-get install openssl'")


def test_a_tool_that_hangs_is_stopped_at_its_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(CasstorError, match=r"^sleep did not finish within 1 s and was stopped$"):
        run_tool(["sleep", "30"], "sleep", timeout=1)
    assert time.monotonic() - started < 10


def test_a_failing_tool_is_its_status_and_last_lines() -> None:
    with pytest.raises(CasstorError) as caught:
        run_tool(["sh", "-c", "for i in 1 2 3 4; do echo line$i; done; echo boom >&2; exit 3"], "boomer", timeout=30)
    assert str(caught.value) == "boomer failed (exit status 3): line3 | line4 | boom"
    assert caught.value.exit_code == 1
