"""A joining node that gave up on its seed is started once more; any other start-up failure is final (no JVM);
a stopped node is waited for until its process has exited."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest

from casstor_ops.cluster.launcher import (GOSSIP_UNREACHABLE, SEED_UNREACHABLE, LocalCluster, _listening, _port_free,
                                         _wait_exited)
from casstor_ops.errors import CasstorError


class FakeNode:
    """Fails its first ``len(errors)`` starts with the given errors, then starts."""

    index = 3

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.starts = 0

    def start(self, log, seeds: str) -> None:
        self.starts += 1
        if self.errors:
            raise CasstorError(self.errors.pop(0))


@pytest.mark.parametrize("missed", [f"{SEED_UNREACHABLE}: [/127.0.0.1:7000]", GOSSIP_UNREACHABLE])
def test_a_node_that_missed_its_seed_is_started_again(missed: str) -> None:
    """Injects the start-up failures seen on a loaded machine; checks one more start, and a line saying why."""
    node, said = FakeNode(f"node3 exited with code 3 during start-up; see x: java.lang.RuntimeException: {missed}"), []
    LocalCluster._start_joining(node, said.append, "127.0.0.1:7000")
    assert node.starts == 2 and said == ["node3: the seed did not answer in time; starting it again"]


@pytest.mark.parametrize("errors", [("port 127.0.0.1:9042 is already in use",),
                                    (SEED_UNREACHABLE, SEED_UNREACHABLE)])
def test_other_failures_and_a_second_miss_are_final(errors: tuple[str, ...]) -> None:
    node = FakeNode(*errors)
    with pytest.raises(CasstorError):
        LocalCluster._start_joining(node, lambda line: None, "127.0.0.1:7000")
    assert node.starts == len(errors)


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
