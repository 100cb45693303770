"""One local Cassandra node: its process, started, waited for, stopped and killed by the pid it recorded.

Node *i* listens on 127.0.0.*i*, with everything under its root
(:mod:`casstor_ops.cluster.node_config` writes its configuration at each
start). A start checks the node's ports are free
(:func:`~casstor_ops.cluster.ports.require_free`), launches ``java ...
org.apache.cassandra.service.CassandraDaemon`` in a session of its own,
records its pid, and waits until its CQL port answers; a node that exits
meanwhile, or does not answer within :data:`START_TIMEOUT_S`, is an error
carrying the tail of its log (and is killed), never a hang. ``stop`` and
``kill`` signal exactly the recorded pid, checked against the process's
command line, so a recycled pid is never killed.

Example::

    >>> node = Node(home / "node1", 1, ClusterPorts(), heap_mb=1024)  # doctest: +SKIP
    >>> node.start(print, seeds="127.0.0.1:7000")                     # doctest: +SKIP
    >>> node.state()                                                  # doctest: +SKIP
    'up'
    >>> node.stop(print)                                              # doctest: +SKIP

Failures (Java 17 missing, a port taken by another process, a node that
dies at start) raise :class:`~casstor_ops.errors.CasstorError`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from casstor_ops.cluster import node_config
from casstor_ops.cluster.jvm import find_java17
from casstor_ops.cluster.ports import ClusterPorts, port_open, require_free
from casstor_ops.cluster.secure_home import SecureHome
from casstor_ops.errors import CasstorError

START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 60.0
# A local ring has no gossip to wait for: 6 s start instead of 51 s. A node that missed its seed with it
# is started again with the patient delay (a 20 s shadow round; its bootstrap then sleeps ~2 x 10 s).
FAST_RING_DELAY_MS = 1000
PATIENT_RING_DELAY_MS = 10000


@dataclass(frozen=True)
class NodeStatus:
    index: int
    address: str
    pid: int | None
    state: str  # 'up', 'starting' (process alive, CQL not answering) or 'down'


def _wait_exited(pid: int, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """Wait until ``pid`` has exited (gone, or a zombie whose every thread has ended); whether it did in time.

    A zombie leader is not enough, nor an empty command line: the JVM's main thread can end while others
    (shutdown hooks) still hold the node's sockets, and /proc shows the leader as a zombie with an empty
    command line meanwhile; a node restarted then found its JMX port listening, with no process to own it.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        except (OSError, ValueError):
            return True
        if status.get("State", "").split()[:1] in (["Z"], ["X"]) and int(status.get("Threads", "1")) <= 1:
            return True
        time.sleep(0.05)
    return False


class Node:
    """One node's directory, configuration and process."""

    def __init__(self, root: Path, index: int, ports: ClusterPorts, heap_mb: int,
                 secure_home: SecureHome | None = None) -> None:
        self.root = root
        self.index = index
        self.ports = ports
        self.heap_mb = heap_mb
        self.secure_home = secure_home
        self.address = f"127.0.0.{index}"
        self.jmx_port = ports.jmx_base + index - 1
        self.pid_file = root / "cassandra.pid"
        self.log_file = root / "logs" / "system.log"

    # -- process ---------------------------------------------------------
    def pid(self) -> int | None:
        """The recorded pid if that process is alive and is this node's JVM."""
        try:
            pid = int(self.pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if str(self.root).encode() in cmdline else None

    def state(self) -> str:
        if self.pid() is None:
            return "down"
        return "up" if port_open(self.address, self.ports.cql) else "starting"

    def start(self, log: Callable[[str], None], seeds: str, ring_delay_ms: int = FAST_RING_DELAY_MS) -> None:
        if self.pid() is not None:
            log(f"node{self.index} ({self.address}) already running, pid {self.pid()}")
            self._wait_until_up()
            return
        if self.pid_file.exists():
            log(f"node{self.index}: removing stale pid file {self.pid_file} (its process is gone)")
            self.pid_file.unlink()
        self._check_ports_free()
        self._write_config(seeds)
        java = find_java17()
        cmd = [str(java), *node_config.jvm_args(self.root, self.heap_mb, self.jmx_port, ring_delay_ms),
               "org.apache.cassandra.service.CassandraDaemon"]
        out = open(self.root / "logs" / "stdout.log", "ab")
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=self.root, start_new_session=True)
        out.close()
        self.pid_file.write_text(f"{proc.pid}\n")
        log(f"node{self.index} ({self.address}) starting, pid {proc.pid}")
        self._wait_until_up(proc)
        log(f"node{self.index} ({self.address}) up, CQL on {self.address}:{self.ports.cql}")

    def stop(self, log: Callable[[str], None]) -> None:
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return
        os.kill(pid, signal.SIGTERM)
        if not _wait_exited(pid):  # not exited, so the pid is still this node's, though /proc no longer names it
            os.kill(pid, signal.SIGKILL)
            _wait_exited(pid)
        self.pid_file.unlink(missing_ok=True)
        log(f"node{self.index} ({self.address}) stopped")

    def kill(self) -> None:
        """SIGKILL the node (fault injection): no drain, no flush."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            _wait_exited(pid)
        self.pid_file.unlink(missing_ok=True)

    def log_tail(self, lines: int = 15) -> str:
        for path in (self.log_file, self.root / "logs" / "stdout.log"):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()
                errors = [line for line in text if " ERROR " in line or "Exception" in line]
                return "\n".join((errors or text)[-lines:])
        return "(no log written)"

    # -- internals ---------------------------------------------------------
    def _wait_until_up(self, proc: subprocess.Popen | None = None) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if port_open(self.address, self.ports.cql):
                return
            if proc is not None and proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise CasstorError(
                    f"node{self.index} exited with code {proc.returncode} during start-up; "
                    f"see {self.log_file}: {self._last_error()}")
            if proc is None and self.pid() is None:
                raise CasstorError(f"node{self.index} died during start-up; see {self.log_file}")
            time.sleep(0.5)
        self.kill()
        raise CasstorError(
            f"node{self.index} did not open CQL port {self.address}:{self.ports.cql} within "
            f"{START_TIMEOUT_S:.0f} s and was killed; see {self.log_file}: {self._last_error()}")

    def _last_error(self) -> str:
        tail = self.log_tail(1).strip()
        return tail[-300:] if tail else "no error logged"

    def _check_ports_free(self) -> None:
        for host, port, setting in [(self.address, self.ports.cql, "CASSTOR_CQL_PORT"),
                                    (self.address, self.ports.storage, "CASSTOR_STORAGE_PORT"),
                                    ("127.0.0.1", self.jmx_port, "CASSTOR_JMX_PORT")]:
            require_free(host, port, setting)

    def _write_config(self, seeds: str) -> None:
        """The node's directories, ``conf/cassandra.yaml`` and ``conf/logback.xml`` (:mod:`.node_config`)."""
        node_config.prepare_directories(self.root)
        security = node_config.security_yaml(self.secure_home, self.index, self.address)
        conf = self.root / "conf"
        (conf / "cassandra.yaml").write_text(
            node_config.cassandra_yaml(self.root, self.address, self.ports, seeds, security))
        (conf / "logback.xml").write_text(node_config.logback_xml(self.log_file))
