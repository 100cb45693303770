"""The local Cassandra cluster: 1..N real Cassandra 5.0 nodes on 127.0.0.i.

Each node is ``java -cp <cassandra jars> org.apache.cassandra.service.CassandraDaemon``
on Java 17, with a generated ``cassandra.yaml`` and every directory (data,
commit log, hints, logs, heap dumps, tmp) under ``<home>/node<i>/``, each
0700 whatever the umask. Node *i* listens on 127.0.0.*i*; node 1 is the
seed; each node has its own JMX port, on loopback only.

A cluster started ``secure`` (recorded in ``cluster.json``, so every later
start keeps it so) runs ``PasswordAuthenticator`` and ``CassandraAuthorizer``
and accepts only TLS clients, each node presenting a certificate of the
cluster's own CA (:mod:`casstor_ops.cluster.certificates`); the roles are set
up by :mod:`casstor_ops.cluster.roles`. Nodes talk to each other in plain
text, on loopback. Without ``secure`` a node is as simple as Cassandra's
defaults: no authentication, no TLS.

Nodes start one at a time, each waited for until its CQL port answers: two
bootstrapping at once die of "Bootstrap Token collision". A node that exits
or does not answer within the timeout is an error carrying the tail of its
log, never a hang. ``stop`` signals exactly the pids recorded in the pid
files (checked against the process's command line, so a recycled pid is
never killed), never processes found by name.

Example::

    >>> cluster = LocalCluster()                 # doctest: +SKIP
    >>> cluster.start(nodes=1)                   # doctest: +SKIP
    >>> cluster.status()[0].state                # doctest: +SKIP
    'up'
    >>> cluster.stop()                           # doctest: +SKIP

Failures (Java 17 missing, a port taken by another process, a node that
dies at start) raise :class:`~casstor_ops.errors.CasstorError`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from casstor_ops.cluster import paths as layout
from casstor_ops.cluster.certificates import ensure_node_keystore
from casstor_ops.cluster.secure_home import SecureHome
from casstor_ops.cluster.tools import run_tool
from casstor_ops.errors import CasstorError
from casstor_ops.cluster.envvars import env_int, env_port, require_range
from casstor_ops.cluster.jvm import JAVA17_MODULE_FLAGS, find_java17

START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 60.0
PORT_RELEASE_S = 65.0   # a TCP TIME_WAIT lasts 60 s on Linux
# Cassandra's start-up errors when a joining node heard from no seed in time: the shadow round (2 x the ring
# delay) and the bootstrap's check for a live seed.
SEED_UNREACHABLE = ("Unable to gossip with any peers", "Unable to contact any seeds")
# A local ring has no gossip to wait for: 6 s start instead of 51 s. A node that missed its seed with it
# is started again with the patient delay (a 20 s shadow round; its bootstrap then sleeps ~2 x 10 s).
FAST_RING_DELAY_MS = 1000
PATIENT_RING_DELAY_MS = 10000
MAX_NODES = 254         # 127.0.0.1..254
MIN_HEAP_MB = 256       # below this Cassandra 5 does not get through start-up
MAX_HEAP_MB = 1 << 20


@dataclass(frozen=True)
class ClusterPorts:
    """Ports shared by every node of one local cluster (each node has its own address)."""

    cql: int = 9042
    storage: int = 7000
    jmx_base: int = 7199  # node i uses jmx_base + i - 1: JMX binds 127.0.0.1 only

    @classmethod
    def from_env(cls) -> "ClusterPorts":
        return cls(
            cql=env_port("CASSTOR_CQL_PORT", cls.cql),
            storage=env_port("CASSTOR_STORAGE_PORT", cls.storage),
            jmx_base=env_port("CASSTOR_JMX_PORT", cls.jmx_base),
        )


@dataclass(frozen=True)
class NodeStatus:
    index: int
    address: str
    pid: int | None
    state: str  # 'up', 'starting' (process alive, CQL not answering) or 'down'


def _port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _proc_net_addresses(host: str, port: int) -> set[str]:
    """How ``/proc/net/tcp`` and ``tcp6`` show ``host:port`` and the wildcard addresses on ``port``: IPv4 as one
    little-endian word, IPv6 as four (so ``::ffff:a.b.c.d``, a v4-mapped address, ends with ``a.b.c.d``'s word)."""
    ipv4 = socket.inet_aton(host)[::-1].hex().upper()
    return {f"{address}:{port:04X}" for address in
            (ipv4, "00000000", "0" * 32, "0000000000000000FFFF0000" + ipv4)}


def _listening(host: str, port: int) -> bool:
    """Whether a TCP socket listens (state 0A) on ``host:port`` or on a wildcard address, IPv4 or IPv6 (a
    dual-stack listener on ``:::port`` shows only in ``/proc/net/tcp6``)."""
    wanted = _proc_net_addresses(host, port)
    lines = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):  # no IPv6 in this kernel: no tcp6
            lines += Path(table).read_text().splitlines()[1:]
    return any(fields[1] in wanted and fields[3] == "0A" for fields in map(str.split, lines))


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            return True
        except OSError:
            return False


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
        return "up" if _port_open(self.address, self.ports.cql) else "starting"

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
        cmd = [str(java), *self._jvm_args(ring_delay_ms), "org.apache.cassandra.service.CassandraDaemon"]
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
            if _port_open(self.address, self.ports.cql):
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
        checks = [(self.address, self.ports.cql, "CASSTOR_CQL_PORT"),
                  (self.address, self.ports.storage, "CASSTOR_STORAGE_PORT"),
                  ("127.0.0.1", self.jmx_port, "CASSTOR_JMX_PORT")]
        for host, port, var in checks:
            # A port no socket listens on is held by closing connections (TIME_WAIT: a nodetool connection to
            # the JMX port of a node just stopped), which Cassandra's JMX cannot bind past: they end within a minute.
            deadline = time.monotonic() + PORT_RELEASE_S
            while not _port_free(host, port) and not _listening(host, port) and time.monotonic() < deadline:
                time.sleep(1)
            if not _port_free(host, port):
                raise CasstorError(
                    f"port {host}:{port} is already in use by another process: stop that process "
                    f"or choose another port with {var}")

    def _jvm_args(self, ring_delay_ms: int) -> list[str]:
        lib = layout.cassandra_lib_dir()
        if not lib.is_dir():
            raise CasstorError(f"Cassandra jars not found in {lib}: run 'make setup'")
        jamm = next(lib.glob("jamm-*.jar"), None)
        heap = f"{self.heap_mb}M"
        root = self.root
        return [
            f"-Xms{heap}", f"-Xmx{heap}", "-ea", "-XX:+UseG1GC", "-Xss256k",
            "-XX:+HeapDumpOnOutOfMemoryError", f"-XX:HeapDumpPath={root / 'heapdump'}",
            "-XX:+PerfDisableSharedMem",
            "-Djava.net.preferIPv4Stack=true", "-Djdk.attach.allowAttachSelf=true",
            "-Dio.netty.tryReflectionSetAccessible=true",
            *JAVA17_MODULE_FLAGS,
            *([f"-javaagent:{jamm}"] if jamm else []),
            f"-Dcassandra.config=file://{root / 'conf' / 'cassandra.yaml'}",
            f"-Dlogback.configurationFile=file://{root / 'conf' / 'logback.xml'}",
            f"-Dcassandra.storagedir={root / 'data'}",
            f"-Dcassandra.logdir={root / 'logs'}",
            f"-Dcassandra.jmx.local.port={self.jmx_port}",
            "-Dcassandra-foreground=yes",
            f"-Dcassandra.ring_delay_ms={ring_delay_ms}", "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            "-Dcassandra.superuser_setup_delay_ms=0",
            f"-Djava.io.tmpdir={root / 'tmp'}", f"-Djna.tmpdir={root / 'tmp'}",
            "-cp", f"{lib}/*",
        ]

    def _security_config(self) -> str:
        """The cassandra.yaml lines of a secure node: passwords, permissions, TLS-only clients; none otherwise."""
        if self.secure_home is None:
            return ""
        keystore = ensure_node_keystore(self.secure_home, self.index, self.address)
        return f"""\
authenticator: PasswordAuthenticator
authorizer: CassandraAuthorizer
role_manager: CassandraRoleManager
client_encryption_options:
  enabled: true
  optional: false
  ssl_context_factory:
    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory
  keystore: {keystore}
  require_client_auth: false
"""

    def _write_config(self, seeds: str) -> None:
        root = layout.private_dir(self.root)
        for sub in ("conf", "data", "data/data", "data/commitlog", "data/saved_caches", "data/hints",
                    "data/cdc_raw", "logs", "tmp", "heapdump"):
            layout.private_dir(root / sub)
        data = root / "data"
        yaml = f"""\
# Generated by casstor's launcher; rewritten at every start.
cluster_name: casstor-local
num_tokens: 16
allocate_tokens_for_local_replication_factor: 3
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories: [{data / 'data'}]
commitlog_directory: {data / 'commitlog'}
saved_caches_directory: {data / 'saved_caches'}
hints_directory: {data / 'hints'}
cdc_raw_directory: {data / 'cdc_raw'}
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 32MiB
commitlog_total_space: 512MiB
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{seeds}"
listen_address: {self.address}
rpc_address: {self.address}
storage_port: {self.ports.storage}
native_transport_port: {self.ports.cql}
endpoint_snitch: SimpleSnitch
memtable_heap_space: 128MiB
memtable_offheap_space: 128MiB
concurrent_compactors: 1
disk_access_mode: mmap_index_only
auto_snapshot: false
# The row-cache experiment (notebook 03) toggles caching per table; the cache itself must exist.
row_cache_size: 64MiB
{self._security_config()}"""
        (root / "conf" / "cassandra.yaml").write_text(yaml)
        (root / "conf" / "logback.xml").write_text(f"""\
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>{self.log_file}</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.FixedWindowRollingPolicy">
      <fileNamePattern>{self.log_file}.%i.zip</fileNamePattern>
      <minIndex>1</minIndex><maxIndex>3</maxIndex>
    </rollingPolicy>
    <triggeringPolicy class="ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy">
      <maxFileSize>20MB</maxFileSize>
    </triggeringPolicy>
    <encoder><pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
""")


class LocalCluster:
    """The nodes under one home directory (``$CASSTOR_HOME/cluster`` by default).

    The ports are fixed when the cluster is first created (from
    ``CASSTOR_CQL_PORT`` / ``CASSTOR_STORAGE_PORT`` / ``CASSTOR_JMX_PORT`` or
    the defaults) and recorded in ``cluster.json``, so later commands find
    the same cluster whatever their environment; so is ``secure``, which a
    cluster never loses once started with it.
    """

    def __init__(self, home: Path | None = None, ports: ClusterPorts | None = None,
                 heap_mb: int | None = None) -> None:
        self.home = home or layout.home_dir() / "cluster"
        self.node_count = 0
        self.secure = False
        self.ports = ports
        saved = self._reload()
        self.ports = self.ports or ClusterPorts.from_env()
        if heap_mb is not None:
            require_range(f"--heap-mb {heap_mb}", heap_mb, MIN_HEAP_MB, MAX_HEAP_MB)
        self.heap_mb = heap_mb or saved.get("heap_mb") or env_int("CASSTOR_HEAP_MB", 1024, MIN_HEAP_MB, MAX_HEAP_MB)

    def _reload(self) -> dict:
        """Adopt the ports and node count recorded in ``cluster.json``, if the cluster exists; the record."""
        try:
            saved = json.loads((self.home / "cluster.json").read_text())
        except (OSError, ValueError):
            return {}
        self.ports = ClusterPorts(**saved["ports"])
        self.node_count = saved.get("nodes", 0)
        self.secure = self.secure or saved.get("secure", False)
        return saved

    def _save(self) -> None:
        layout.private_dir(self.home)
        (self.home / "cluster.json").write_text(json.dumps(
            {"ports": asdict(self.ports), "heap_mb": self.heap_mb, "nodes": self.node_count, "secure": self.secure},
            indent=2))

    @property
    def secure_home(self) -> SecureHome | None:
        """Where this cluster's certificates and passwords live, if it is secure."""
        return SecureHome(self.home) if self.secure else None

    def node(self, index: int) -> Node:
        return Node(self.home / f"node{index}", index, self.ports, self.heap_mb, self.secure_home)

    def nodes(self) -> list[Node]:
        return [self.node(i) for i in range(1, self.node_count + 1)]

    @property
    def contact_points(self) -> list[str]:
        return [n.address for n in self.nodes()] or ["127.0.0.1"]

    def start(self, nodes: int | None = None, log: Callable[[str], None] = print, secure: bool = False) -> None:
        """Start every node (adding nodes up to ``nodes``), one at a time; ``secure`` makes the cluster secure
        for good (running nodes must be stopped first: their configuration is written at start).

        Concurrent starts of one cluster (two commands finding no node up)
        take turns: the second waits, then finds the nodes running. Raises
        CasstorError (exit 2) for ``nodes`` outside 1..254, and (exit 1) when
        ``secure`` is asked of a cluster running without it.
        """
        if nodes is not None:
            require_range(f"--nodes {nodes}", nodes, 1, MAX_NODES)
        find_java17()
        with self._start_lock(log):
            self._reload()  # another command may have created or grown the cluster while this one waited
            if secure and not self.secure and any(node.pid() for node in self.nodes()):
                raise CasstorError(f"the local cluster {self.home} is running without --secure: stop it with "
                                   f"'casstor cluster stop', then start it again with --secure")
            self.secure = self.secure or secure
            self.node_count = max(nodes or 1, self.node_count)
            self._save()
            seeds = f"127.0.0.1:{self.ports.storage}"
            for node in self.nodes():
                self._start_joining(node, log, seeds)
            if self.node_count > 1:
                self._wait_for_ring(log)

    @contextlib.contextmanager
    def _start_lock(self, log: Callable[[str], None]) -> Iterator[None]:
        """Hold ``<home>/start.lock`` while starting nodes.

        Without it two commands that both find no node running each launch a
        JVM per node, and the pid file keeps only one of them. flock is
        released by the kernel when the holder exits, so a killed command
        never leaves the cluster locked; the JVMs do not inherit the lock
        (Popen closes other descriptors).
        """
        layout.private_dir(self.home)
        with open(self.home / "start.lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log("another command is starting the local cluster; waiting for it")
                fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _wait_for_ring(self, log: Callable[[str], None]) -> None:
        """Wait until the seed sees every node Up/Normal: a node answers CQL before gossip has
        spread its state, and 'casstor init' right after would count too few nodes for its RF."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            normal = sum(1 for line in self.nodetool("status").splitlines() if line.startswith("UN "))
            if normal == self.node_count:
                log(f"ring: all {normal} nodes Up/Normal")
                return
            if time.monotonic() > deadline:
                raise CasstorError(f"only {normal} of {self.node_count} nodes are Up/Normal after "
                                   f"{START_TIMEOUT_S:.0f} s; see 'casstor cluster status --nodetool'")
            time.sleep(2)

    @staticmethod
    def _start_joining(node: "Node", log: Callable[[str], None], seeds: str) -> None:
        """Start ``node``; once more, with the patient ring delay, if it gave up on the seed.

        With the fast-start flags a joining node waits only 2 s for the seed's
        gossip (its shadow round); on a loaded machine the seed answers later
        (seen: "Unable to gossip with any peers" 4 s after node2 first reached
        node1, "Unable to contact any seeds" from a third node while the first
        was up). Starting it again just as fast can miss again.
        """
        try:
            node.start(log, seeds)
        except CasstorError as err:
            if not any(marker in str(err) for marker in SEED_UNREACHABLE):
                raise
            log(f"node{node.index}: the seed did not answer in time; starting it again, waiting longer for gossip")
            node.start(log, seeds, ring_delay_ms=PATIENT_RING_DELAY_MS)

    def start_node(self, index: int, log: Callable[[str], None] = print) -> None:
        with self._start_lock(log):
            self._start_joining(self.node(index), log, f"127.0.0.1:{self.ports.storage}")

    def stop(self, log: Callable[[str], None] = print) -> None:
        # Reverse order: the seed goes last, so the others can leave gossip cleanly.
        for node in reversed(self.nodes()):
            node.stop(log)

    def status(self) -> list[NodeStatus]:
        return [NodeStatus(n.index, n.address, n.pid(), n.state()) for n in self.nodes()]

    def is_up(self) -> bool:
        return any(s.state == "up" for s in self.status())

    def nodetool(self, *args: str, node: int = 1, timeout: float = 120) -> str:
        """Run ``nodetool`` (NodeTool from the same jars) against one node's JMX port."""
        return self._tool("nodetool", "NodeTool", ["-h", "127.0.0.1", "-p", str(self.node(node).jmx_port), *args],
                          node, timeout, [f"-Duser.home={self.home}"])

    def offline_scrub(self, keyspace: str, table: str, node: int, timeout: float = 600) -> str:
        """``sstablescrub`` (StandaloneScrubber) of one table on a stopped node: rewrites its SSTables without
        the rows that fail their checksums. Unlike ``nodetool scrub`` it also rewrites an SSTable the running
        node marked suspect after a failed read (which the online scrub and verify skip until a restart).

        Example: ``cluster.node(3).stop(print); cluster.offline_scrub("casstor_data", "blocks", node=3)``.
        Failures: the node still running, or the tool failing: CasstorError naming its last output lines.
        """
        target = self.node(node)
        if target.pid() is not None:
            raise CasstorError(f"node{node} is running: stop it before an offline scrub")
        conf = target.root / "conf"
        return self._tool("sstablescrub", "StandaloneScrubber", [keyspace, table], node, timeout,
                          [f"-Dcassandra.config=file://{conf / 'cassandra.yaml'}",
                           f"-Dcassandra.storagedir={target.root / 'data'}",
                           f"-Dcassandra.logdir={target.root / 'logs'}"])

    def _tool(self, name: str, main_class: str, args: list[str], node: int, timeout: float,
              properties: list[str]) -> str:
        """Run one of Cassandra's Java tools from the same jars; its output (failures: :func:`.tools.run_tool`)."""
        cmd = [str(find_java17()), "-Xmx256m", *JAVA17_MODULE_FLAGS, *properties,
               "-Dlogback.configurationFile=file:///dev/null",
               "-cp", f"{layout.cassandra_lib_dir()}/*", f"org.apache.cassandra.tools.{main_class}", *args]
        return run_tool(cmd, f"{name} {' '.join(args)} on node{node}", timeout)
