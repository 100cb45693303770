"""Reaching the cluster: the embedded local node, or ``CASSTOR_NODES``.

* ``CASSTOR_NODES`` unset: the local cluster of :mod:`casstor_ops.launcher`
  is used, and started (saying so on stderr) when it is not running.
* ``CASSTOR_NODES=h1,h2[:port]``: an existing cluster; nothing is ever
  started. Optional ``CASSTOR_PORT``, ``CASSTOR_USERNAME`` /
  ``CASSTOR_PASSWORD``, ``CASSTOR_SSL_CA`` (a CA file: enables TLS),
  ``CASSTOR_LOCAL_DC``.
* ``CASSTOR_CONSISTENCY``: the one consistency level of every casstor read
  and write (default QUORUM, LOCAL_QUORUM when ``CASSTOR_LOCAL_DC`` is set),
  so a file never points at a block held by fewer replicas than its rows.

Example::

    >>> session = connect()                    # doctest: +SKIP
    >>> session.execute("SELECT release_version FROM system.local").one()  # doctest: +SKIP

Raises :class:`~casstor_ops.errors.CasstorError` when the cluster cannot be
reached, naming the hosts and the fix.
"""

from __future__ import annotations

import os
import ssl
import sys
from dataclasses import dataclass, field

from cassandra import ConsistencyLevel, ProtocolVersion
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable, Session
from cassandra.io.libevreactor import LibevConnection
from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy, TokenAwarePolicy

from .errors import CasstorError
from .launcher import LocalCluster

REQUEST_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Endpoint:
    """Everything needed to open a session; picklable, so Spark executors get a copy."""

    hosts: tuple[str, ...]
    port: int
    embedded: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_ca: str | None = None
    local_dc: str | None = None
    consistency: str = "QUORUM"

    @property
    def description(self) -> str:
        return ",".join(f"{h}:{self.port}" for h in self.hosts)


def endpoint_from_env() -> Endpoint:
    """The cluster the environment names (see the module docstring)."""
    local_dc = os.environ.get("CASSTOR_LOCAL_DC") or None
    consistency = os.environ.get("CASSTOR_CONSISTENCY", "LOCAL_QUORUM" if local_dc else "QUORUM").upper()
    if consistency not in ConsistencyLevel.name_to_value:
        raise CasstorError(f"CASSTOR_CONSISTENCY={consistency}: not a consistency level (e.g. QUORUM, LOCAL_QUORUM)")
    nodes = os.environ.get("CASSTOR_NODES", "").strip()
    if not nodes:
        local = LocalCluster()
        return Endpoint(tuple(local.contact_points), local.ports.cql, True,
                        local_dc=local_dc, consistency=consistency)
    hosts, ports = [], set()
    for item in nodes.split(","):
        host, _, port = item.strip().partition(":")
        if not host or (port and not port.isdigit()):
            raise CasstorError(f"CASSTOR_NODES={nodes!r}: expected host[:port],host[:port],...")
        hosts.append(host)
        if port:
            ports.add(int(port))
    if len(ports) > 1:
        raise CasstorError(f"CASSTOR_NODES={nodes!r}: all hosts must use one CQL port")
    port = ports.pop() if ports else int(os.environ.get("CASSTOR_PORT", 9042))
    return Endpoint(tuple(hosts), port, False, os.environ.get("CASSTOR_USERNAME"),
                    os.environ.get("CASSTOR_PASSWORD"), os.environ.get("CASSTOR_SSL_CA"),
                    local_dc, consistency)


def ensure_running(endpoint: Endpoint) -> None:
    """Start the embedded local node if the endpoint is embedded and nothing answers."""
    if not endpoint.embedded:
        return
    cluster = LocalCluster()
    if not cluster.is_up():
        print("casstor: the local Cassandra node is not running; starting it "
              "(first start takes ~15 s; stop it with 'casstor cluster stop')", file=sys.stderr)
        cluster.start(log=lambda msg: print(f"casstor: {msg}", file=sys.stderr))


def open_cluster(endpoint: Endpoint) -> Cluster:
    """A driver ``Cluster`` for the endpoint (not yet connected)."""
    # libev costs half the client CPU per MB of asyncio; protocol v4 avoids v5's per-frame CRC cost and
    # driver 3.30.1's v5 "CRC mismatch on header" failures with varied blob sizes (docs/driver.md).
    # libev reports ConnectionBusy past ~64 in-flight 64 KiB requests: casstor_ops.inflight bounds them.
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=endpoint.local_dc)),
        consistency_level=ConsistencyLevel.name_to_value[endpoint.consistency],
        request_timeout=REQUEST_TIMEOUT_S,
    )
    ssl_context = None
    if endpoint.ssl_ca:
        ssl_context = ssl.create_default_context(cafile=endpoint.ssl_ca)
    auth = PlainTextAuthProvider(endpoint.username, endpoint.password) if endpoint.username else None
    return Cluster(
        contact_points=list(endpoint.hosts), port=endpoint.port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connection_class=LibevConnection, protocol_version=ProtocolVersion.V4,
        auth_provider=auth, ssl_context=ssl_context,
        reconnection_policy=ExponentialReconnectionPolicy(0.5, 10.0),
        connect_timeout=10, control_connection_timeout=10.0,
    )


def connect(endpoint: Endpoint | None = None, start: bool = True) -> Session:
    """Open a session (starting the embedded node first when ``start``)."""
    endpoint = endpoint or endpoint_from_env()
    if start:
        ensure_running(endpoint)
    cluster = open_cluster(endpoint)
    try:
        return cluster.connect()
    except NoHostAvailable as err:
        cluster.shutdown()
        reason = next(iter(err.errors.values()), err) if err.errors else err
        fix = ("check the hosts or unset CASSTOR_NODES to use the local node" if not endpoint.embedded
               else "run 'casstor cluster status' and see the node's log")
        raise CasstorError(f"cannot reach Cassandra at {endpoint.description}: {reason}; {fix}") from None
    except Exception as err:  # the driver raises bare OSError/ssl errors for some failures
        cluster.shutdown()
        raise CasstorError(f"cannot reach Cassandra at {endpoint.description}: {err}") from None
