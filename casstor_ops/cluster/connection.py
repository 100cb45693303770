"""Opening driver sessions to the cluster an :class:`Endpoint` names, starting the embedded node if need be.

Where to connect is read from the environment by :mod:`casstor_ops.cluster.endpoint`
(``CASSTOR_NODES`` unset: the embedded local node, started here, saying so
on stderr, when it is not running; set: an existing cluster, nothing ever
started); which failures are the user's, and their one line, is
:mod:`casstor_ops.cluster.driver_errors`. Their public names
(:class:`Endpoint`, :func:`endpoint_from_env`, :func:`connect_error`,
:func:`reported_as_user_errors` and the settings' constants) are importable
from here too, so a caller needs one import to connect.

Example::

    >>> session = connect()                    # doctest: +SKIP
    >>> session.execute("SELECT release_version FROM system.local").one()  # doctest: +SKIP

Raises :class:`~casstor_ops.errors.CasstorError` with one line naming the
hosts and the fix, and its own exit code: a bad setting (usage, 2), no host
reachable (``EXIT_UNREACHABLE``), credentials refused (``EXIT_AUTH``), no
answer in time (``EXIT_TIMEOUT``). Any other failure is a bug and keeps its
traceback. The same classification serves requests on an open session
(:func:`reported_as_user_errors`), which adds a refused permission
(``EXIT_UNAUTHORISED``).
"""

from __future__ import annotations

import socket
import ssl
import sys
import weakref

from cassandra import ConsistencyLevel, ProtocolVersion
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy, TokenAwarePolicy

from casstor_ops.cluster.driver_errors import connect_error, reported_as_user_errors
from casstor_ops.cluster.endpoint import CONSISTENCY_LEVELS, PASSWORD_FILE_SETTING, Endpoint, endpoint_from_env
from casstor_ops.cluster.libev_connection import QueuedLibevConnection
from casstor_ops.cluster.skip_metadata import skipping_metadata
from casstor_ops.errors import EXIT_USAGE, CasstorError

# Callers import these from here (see the module docstring).
__all__ = ["CONSISTENCY_LEVELS", "PASSWORD_FILE_SETTING", "REQUEST_TIMEOUT_S", "Endpoint", "connect", "connect_error",
           "endpoint_from_env", "endpoint_of", "ensure_running", "open_cluster", "reported_as_user_errors"]

REQUEST_TIMEOUT_S = 30.0
# The driver leaves Nagle's algorithm on: a request larger than one TCP segment (a 4 KiB block) waits for the
# node's delayed ACK before its last segment goes out, ~40 ms on Linux. Measured one request at a time (a
# small PUT's pattern): a 4 KiB block insert took 46 ms of wall time with Nagle, 3.8 ms without.
SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def ensure_running(endpoint: Endpoint) -> None:
    """Start the embedded local node if the endpoint is embedded and nothing answers."""
    if not endpoint.embedded:
        return
    from casstor_ops.cluster.launcher import LocalCluster

    cluster = LocalCluster()
    if not cluster.is_up():
        print("casstor: the local Cassandra node is not running; starting it "
              "(first start takes ~15 s; stop it with 'casstor cluster stop')", file=sys.stderr)
        cluster.start(log=lambda msg: print(f"casstor: {msg}", file=sys.stderr))


def open_cluster(endpoint: Endpoint, schema_metadata: bool = True) -> Cluster:
    """A driver ``Cluster`` for the endpoint (not yet connected).

    ``schema_metadata`` False: the driver does not read every keyspace's
    schema on connect (0.1-0.25 s of a one-file command here); the caller
    loads the keyspaces it routes to (``refresh_keyspace_metadata``), which
    token-aware routing needs.
    """
    # libev costs half the client CPU per MB of asyncio; protocol v4 avoids v5's per-frame CRC cost and
    # driver 3.30.1's v5 "CRC mismatch on header" failures with varied blob sizes (docs/driver.md).
    # The driver's libev connection refuses requests as busy until its whole send queue has drained; ours only
    # while 128 MiB wait (casstor_ops.cluster.libev_connection), and casstor_ops.store.cql.request_queue bounds what is
    # in flight.
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=endpoint.local_dc)),
        consistency_level=ConsistencyLevel.name_to_value[endpoint.consistency],
        request_timeout=REQUEST_TIMEOUT_S,
    )
    ssl_context = None
    if endpoint.ssl_ca:
        try:
            ssl_context = ssl.create_default_context(cafile=endpoint.ssl_ca)
        except OSError as err:  # a missing or unreadable CA file is a setting to fix, not an unreachable host
            raise CasstorError(f"CASSTOR_SSL_CA={endpoint.ssl_ca}: {err.strerror or err}", EXIT_USAGE) from None
    auth = PlainTextAuthProvider(endpoint.username, endpoint.secret()) if endpoint.username else None
    cluster = Cluster(
        contact_points=list(endpoint.hosts), port=endpoint.port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connection_class=QueuedLibevConnection, protocol_version=ProtocolVersion.V4,
        auth_provider=auth, ssl_context=ssl_context,
        reconnection_policy=ExponentialReconnectionPolicy(0.5, 10.0),
        connect_timeout=10, control_connection_timeout=10.0, schema_metadata_enabled=schema_metadata,
        sockopts=SOCKET_OPTIONS,
    )
    _endpoints[cluster] = endpoint
    return cluster


# The endpoint each cluster was opened for, so a failed request names the hosts and the fix as a failed connect
# does; weak, so a cluster is not kept alive by it.
_endpoints: "weakref.WeakKeyDictionary[Cluster, Endpoint]" = weakref.WeakKeyDictionary()


def endpoint_of(session: Session) -> Endpoint:
    """The endpoint ``session`` was opened for (:func:`open_cluster`), else one built from its contact points.

    Example: ``endpoint_of(connect()).description`` -> ``'127.0.0.1:9042'``. Never fails.
    """
    cluster = session.cluster
    return _endpoints.get(cluster) or Endpoint(tuple(map(str, cluster.contact_points)), cluster.port, False)


def connect(endpoint: Endpoint | None = None, start: bool = True, schema_metadata: bool = True) -> Session:
    """Open a session (starting the embedded node first when ``start``; ``schema_metadata`` as :func:`open_cluster`),
    whose prepared reads are answered without their column list (:mod:`.skip_metadata`).

    Example: ``connect().execute("SELECT release_version FROM system.local")``.
    Failing to connect raises the one-line CasstorError of
    :func:`connect_error`; an error it does not recognise propagates as is.
    """
    endpoint = endpoint or endpoint_from_env()
    if start:
        ensure_running(endpoint)
    cluster = None
    with reported_as_user_errors(endpoint):
        try:
            cluster = open_cluster(endpoint, schema_metadata)
            session = cluster.connect()
        except Exception:
            if cluster is not None:
                cluster.shutdown()
            raise
    session.client_protocol_handler = skipping_metadata(session.client_protocol_handler)
    return session


