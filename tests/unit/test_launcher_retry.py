"""A joining node that gave up on its seed is started once more, waiting longer for gossip; any other start-up
failure is final (no JVM); a stopped node is waited for until its process has exited."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.node_process import FAST_RING_DELAY_MS, PATIENT_RING_DELAY_MS, _wait_exited
from casstor_ops.cluster.ports import _listening, _port_free
from casstor_ops.errors import CasstorError


class FakeNode:
    """Fails its first ``len(errors)`` starts with the given errors, then starts; records each start's ring delay."""

    index = 3

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.ring_delays: list[int] = []

    def start(self, log, seeds: str, ring_delay_ms: int = FAST_RING_DELAY_MS) -> None:
        self.ring_delays.append(ring_delay_ms)
        if self.errors:
            raise CasstorError(self.errors.pop(0))


# Cassandra 5.0.9's own words: the shadow round's timeout, and the bootstrap's check for a live seed.
SEED_MISSED = ["java.lang.RuntimeException: Unable to gossip with any peers",
               "java.lang.IllegalStateException: Unable to contact any seeds: [/127.0.0.1:7000]"]


@pytest.mark.parametrize("missed", SEED_MISSED)
def test_a_node_that_missed_its_seed_is_started_again_with_a_longer_ring_delay(missed: str) -> None:
    """Injects each start-up failure seen on a loaded machine (the shadow round's and the bootstrap's); checks
    one more start with the patient ring delay, and a line saying why."""
    node, said = FakeNode(f"node3 exited with code 3 during start-up; see x: {missed}"), []
    LocalCluster._start_joining(node, said.append, "127.0.0.1:7000")
    assert node.ring_delays == [FAST_RING_DELAY_MS, PATIENT_RING_DELAY_MS]
    assert said == ["node3: the seed did not answer in time; starting it again, waiting longer for gossip"]


@pytest.mark.parametrize("errors", [("port 127.0.0.1:9042 is already in use",),
                                    tuple(SEED_MISSED)])
def test_other_failures_and_a_second_miss_are_final(errors: tuple[str, ...]) -> None:
    node = FakeNode(*errors)
    with pytest.raises(CasstorError):
        LocalCluster._start_joining(node, lambda line: None, "127.0.0.1:7000")
    assert len(node.ring_delays) == len(errors)



def test_a_stopped_node_counts_as_exited_only_once_its_process_has() -> None:
    """A real child process: running, it is waited for (up to the timeout); killed and not yet reaped (a zombie,
    its sockets closed), it is not."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = time.monotonic()
        _wait_exited(child.pid, timeout_s=0.5)
        assert time.monotonic() - started >= 0.5
        child.send_signal(signal.SIGKILL)
        started = time.monotonic()
        _wait_exited(child.pid, timeout_s=30)
        assert time.monotonic() - started < 10
    finally:
        child.kill()
        child.wait()


# The child's main thread ends (pthread_exit) while another thread goes on for a while, as a JVM's main thread
# can while its shutdown hooks run: /proc shows the leader as a zombie with an empty command line meanwhile.
LEADER_GONE_FIRST = ("import ctypes, threading, time; threading.Thread(target=time.sleep, args=(3,)).start(); "
                     "ctypes.CDLL(None).pthread_exit(None)")


def test_a_process_whose_main_thread_ended_first_is_waited_for_until_its_last_thread_ends() -> None:
    """Injects: a real child whose leader thread exits 3 s before its last thread (a zombie leader, empty
    command line, the sockets still open). Checks: it does not count as exited until that thread ended."""
    child = subprocess.Popen([sys.executable, "-c", LEADER_GONE_FIRST])
    try:
        started = time.monotonic()
        time.sleep(0.5)
        assert Path(f"/proc/{child.pid}/cmdline").read_bytes() == b""  # what the node's pid() relies on: gone
        assert _wait_exited(child.pid, timeout_s=30)
        assert time.monotonic() - started >= 2.5
    finally:
        child.kill()
        child.wait()


def test_a_listening_port_is_told_from_one_held_only_by_closing_connections() -> None:
    """Real sockets on a port the kernel picks: a listener counts as taken at once; a TIME_WAIT left by a
    connection the server side closed first (what a stopped node's JMX port keeps) is not a listener."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    assert _listening("127.0.0.1", port) and not _listening("127.0.0.2", port)
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()
    server.close()
    client.close()
    assert not _listening("127.0.0.1", port) and not _port_free("127.0.0.1", port)
