"""Helpers of the fault and soak suites: a job run in the background, waiting for it to be at work, checks.

A fault is injected *during* a job only once the job visibly works (its
output, its destination or the store's tables say so), never before it
started or after it ended: :func:`kill_node_during` fails the test when the
job ended first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from casstor_ops.cluster.launcher import LocalCluster

from .support import ROOT, SPARK_SUBMIT, THREE_NODE_PORTS

JOB_TIMEOUT_S = 900


class BackgroundJob:
    """A process whose stdout and stderr go to ``log``; in its own process group, killed by its own pid."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=ROOT, start_new_session=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float = JOB_TIMEOUT_S) -> tuple[int, str]:
        """Exit status and output; the whole group is killed (and the test fails) when it takes longer."""
        try:
            return self.proc.wait(timeout), self.output()
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.proc.args} did not end within {timeout:.0f} s: {self.output()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL the job and every process it started (its process group, led by our child's pid)."""
        if self.running():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@contextlib.contextmanager
def three_node_env(cluster: LocalCluster) -> Iterator[None]:
    """``CASSTOR_*`` of the module's three nodes (QUORUM) for this process and the jobs it starts, then restored."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CASSTOR_NODES", ",".join(cluster.contact_points))
        env.setenv("CASSTOR_PORT", str(THREE_NODE_PORTS.cql))
        env.setenv("CASSTOR_CONSISTENCY", "QUORUM")
        env.setenv("PYSPARK_PYTHON", sys.executable)
        yield


def submit(*args: str, log: Path, env: dict[str, str] | None = None) -> BackgroundJob:
    """``spark-submit --master local[2] <job> <args>`` in the background; console progress bars on (``[Stage``)."""
    return BackgroundJob([str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                          "--conf", "spark.ui.showConsoleProgress=true", *args], log, env)


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


def kill_node_during(cluster: LocalCluster, index: int, job: BackgroundJob, at_work: Callable[[], bool],
                     timeout_s: float = 600) -> None:
    """SIGKILL node ``index`` (its pid from the launcher's pid file) once ``at_work()`` is true while ``job`` runs."""
    wait_until(lambda: not job.running() or at_work(), timeout_s, f"{job.proc.args[3:]} to be at work")
    assert job.running(), f"the job ended before the fault could be injected:\n{job.output()[-3000:]}"
    assert cluster.node(index).pid() is not None, f"node{index} is not running"
    cluster.node(index).kill()


def casstor_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("casstor: ")]


def assert_one_line_failure(code: int, output: str) -> str:
    """A failed job said why in one ``casstor:`` line and printed no Python traceback; that line."""
    lines = casstor_lines(output)
    assert code != 0 and len(lines) == 1 and "Traceback" not in output, output[-5000:]
    return lines[0]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for piece in iter(lambda: file.read(1 << 20), b""):
            digest.update(piece)
    return digest.hexdigest()
