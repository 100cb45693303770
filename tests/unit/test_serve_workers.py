"""``--workers N``: the supervisor of forked workers (no node: each worker here only waits for SIGTERM).

Run in a child interpreter, so the supervisor's signal handlers and forks
never touch the test process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator

import pytest

SUPERVISOR = textwrap.dedent("""
    import os, signal, sys
    import cassandra.cluster  # imported before the fork, as by the server: it starts a thread when imported
    from casstor_ops.errors import CasstorError
    from casstor_ops.serve.workers import run_workers

    failing, when = int(sys.argv[1]), sys.argv[2]
    if when == "other-thread":  # only another thread (as numpy's, the driver's) may take SIGTERM
        import threading, time
        threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    if when == "during-forks":  # a SIGTERM comes as soon as the first worker is forked
        real_fork = os.fork

        def fork():
            pid = real_fork()
            if pid:
                os.fork = real_fork
                os.write(1, f"forked {pid}\\n".encode())  # one write: the workers share the pipe
                os.kill(os.getpid(), signal.SIGTERM)
            return pid
        os.fork = fork

    def work(index, ready):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        if index == failing and when == "before":
            raise CasstorError("Cassandra unreachable", 6)
        if index == failing and when == "system-exit":
            sys.exit(3)  # as uvicorn does when its start-up fails
        os.write(1, f"worker {index} pid {os.getpid()}\\n".encode())  # one write: the workers share the pipe
        ready()
        if index == failing and when == "clean-exit":
            return
        if index == failing:
            raise CasstorError("lost the store", 6)
        signal.sigwait({signal.SIGTERM})

    code = run_workers(2, work, lambda: print("ready", flush=True))
    print(f"exit {code}", flush=True)
""")


@pytest.fixture()
def supervisors() -> Iterator[Callable[[int, str], subprocess.Popen]]:
    """Starts supervisors in sessions of their own; whatever a test leaves of them (a hang) is killed after it."""
    started: list[subprocess.Popen] = []

    def start(failing: int, when: str) -> subprocess.Popen:
        started.append(subprocess.Popen([sys.executable, "-c", SUPERVISOR, str(failing), when],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True))
        return started[-1]

    yield start
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the supervisor's session: it and its workers
        process.communicate()


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has exited
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("when", ["", "other-thread"])
def test_sigterm_stops_every_worker_and_exits_0(supervisors, when: str) -> None:
    """``other-thread`` injects a SIGTERM that the kernel delivers to a thread other than the main one (the
    driver's, as in the real server): the supervisor must still pass it on and exit."""
    supervisor = supervisors(-1, when)
    lines = [supervisor.stdout.readline().strip() for _ in range(3)]
    assert lines[2] == "ready" and sorted(lines[:2])[0].startswith("worker 0")
    supervisor.send_signal(signal.SIGTERM)
    out, _ = supervisor.communicate(timeout=30)
    assert out.strip() == "exit 0" and supervisor.returncode == 0
    assert all(_gone(int(line.split()[-1])) for line in lines[:2])


def test_a_worker_that_dies_stops_the_others_and_its_status_is_returned(supervisors) -> None:
    supervisor = supervisors(1, "after")
    out, err = supervisor.communicate(timeout=30)
    assert "exit 6" in out and "casstor: lost the store" in err
    assert "worker 1 exited with status 6: stopping the server" in err


def test_a_worker_that_cannot_start_means_the_server_never_says_ready(supervisors) -> None:
    supervisor = supervisors(0, "before")
    out, err = supervisor.communicate(timeout=30)
    assert "ready" not in out and "exit 6" in out
    assert err.count("casstor: Cassandra unreachable") == 1 and "Traceback" not in err


def test_a_worker_that_exits_0_unasked_makes_the_server_exit_1(supervisors) -> None:
    """A worker that returns (exit 0) while nobody stopped the server: a failure, or a service manager's
    Restart=on-failure would never restart the server."""
    supervisor = supervisors(1, "clean-exit")
    out, err = supervisor.communicate(timeout=30)
    assert "exit 1" in out and "worker 1 exited with status 0: stopping the server" in err


def test_a_workers_system_exit_is_its_exit_status_without_a_traceback(supervisors) -> None:
    supervisor = supervisors(0, "system-exit")
    out, err = supervisor.communicate(timeout=30)
    assert "ready" not in out and "exit 3" in out and "Traceback" not in err


def test_a_sigterm_during_the_forks_leaves_no_worker_behind(supervisors) -> None:
    """Injects a SIGTERM into the supervisor just after its first fork, before the second; checks the supervisor
    still stops what it forked and returns, and no worker outlives it (orphaned, serving on)."""
    supervisor = supervisors(-1, "during-forks")
    out, _ = supervisor.communicate(timeout=30)
    forked = [int(line.split()[1]) for line in out.splitlines() if line.startswith("forked ")]
    assert supervisor.returncode == 0 and "ready" not in out and "exit " in out
    assert len(forked) == 1 and _gone(forked[0])
