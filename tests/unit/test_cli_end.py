"""``casstor_ops.cli.main.end``: how a command's process ends, in child processes of its own (no node).

What each test checks: the status is kept; what the command wrote to stdout and stderr (past any buffer)
arrives whole; the exit functions registered by the command's libraries still run; a non-daemon thread still
running is waited for (the interpreter's own exit is taken); a stdout whose reader is gone ends the process
with 1 and no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PRELUDE = "import atexit, sys, threading, time\nfrom casstor_ops.cli.main import end\n"
# Buffered, as a command's output is by default: what end must flush (PYTHONUNBUFFERED would write it at once).
BUFFERED = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}


def _child(body: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=60, env=BUFFERED)


def test_the_status_output_and_exit_functions_are_kept() -> None:
    """A status of 3, 200,000 characters on stdout and a line on stderr, none flushed by the child, and an exit
    function that writes a last line: all of it arrives, in order, and the status is 3."""
    done = _child("""
        atexit.register(lambda: print("exit function ran"))
        sys.stdout.write("x" * 200_000)
        sys.stderr.write("to stderr")
        end(3)
    """)
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 + "exit function ran\n"
    assert done.stderr == "to stderr"


def test_a_thread_still_running_is_waited_for() -> None:
    """A non-daemon thread that writes after 0.3 s: its line is in the output (without the wait it would be
    cut off by the process's end)."""
    done = _child("""
        threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
        end(0)
    """)
    assert (done.returncode, done.stdout) == (0, "thread done\n")


def test_a_reader_gone_ends_with_1_and_no_traceback() -> None:
    """stdout a pipe whose reader has closed it before the child's buffered output is flushed at its end."""
    reader_gone = subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent("""
        sys.stdin.read()  # until the parent has closed its end of stdout's pipe
        sys.stdout.write("x" * 100)
        end(0)
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=BUFFERED)
    reader_gone.stdout.close()
    _, stderr = reader_gone.communicate("", timeout=60)
    assert reader_gone.returncode == 1
    assert "Traceback" not in stderr
