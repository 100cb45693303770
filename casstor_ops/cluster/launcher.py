"""The local Cassandra cluster: 1..N real Cassandra 5.0 nodes on 127.0.0.i, and its record, ``cluster.json``.

Each node is ``java -cp <cassandra jars> org.apache.cassandra.service.CassandraDaemon``
on Java 17 (:mod:`casstor_ops.cluster.node_process`), with a generated
``cassandra.yaml`` and every directory (data, commit log, hints, logs, heap
dumps, tmp) under ``<home>/node<i>/``, each 0700 whatever the umask
(:mod:`casstor_ops.cluster.node_config`). Node *i* listens on 127.0.0.*i*;
node 1 is the seed; each node has its own JMX port, on loopback only
(:mod:`casstor_ops.cluster.ports`). ``ClusterPorts``, ``Node`` and
``NodeStatus`` are importable from here too.

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
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterator

from casstor_ops.cluster import paths as layout
from casstor_ops.cluster.envvars import env_int, require_range
from casstor_ops.cluster.jvm import JAVA17_MODULE_FLAGS, find_java17
from casstor_ops.cluster.node_process import PATIENT_RING_DELAY_MS, START_TIMEOUT_S, Node, NodeStatus
from casstor_ops.cluster.ports import ClusterPorts
from casstor_ops.cluster.secure_home import SecureHome
from casstor_ops.cluster.tools import run_tool
from casstor_ops.errors import CasstorError

# Cassandra's start-up errors when a joining node heard from no seed in time: the shadow round (2 x the ring
# delay) and the bootstrap's check for a live seed.
SEED_UNREACHABLE = ("Unable to gossip with any peers", "Unable to contact any seeds")
MAX_NODES = 254         # 127.0.0.1..254
MIN_HEAP_MB = 256       # below this Cassandra 5 does not get through start-up
MAX_HEAP_MB = 1 << 20


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
