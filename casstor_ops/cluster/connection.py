"""Reaching the cluster: the embedded local node, or ``CASSTOR_NODES``.

* ``CASSTOR_NODES`` unset: the local cluster of :mod:`casstor_ops.cluster.launcher`
  is used, and started (saying so on stderr) when it is not running. A
  secure one (``casstor cluster start --secure``) is reached through TLS as
  its ``casstor`` role, with the CA and password file of its home, unless
  ``CASSTOR_USERNAME`` and a password name another role.
* ``CASSTOR_NODES=h1,h2[:port]``: an existing cluster; nothing is ever
  started. Optional ``CASSTOR_PORT``, ``CASSTOR_USERNAME`` with
  ``CASSTOR_PASSWORD_FILE`` (a file holding the password, readable by its
  owner only) or ``CASSTOR_PASSWORD``, ``CASSTOR_SSL_CA`` (a CA file:
  enables TLS, and the nodes' certificates must name their addresses),
  ``CASSTOR_LOCAL_DC``.

The password itself is never kept in an :class:`Endpoint` read from a
password file: the endpoint holds the file's path and reads it when it
connects, so an endpoint pickled to Spark executors carries no secret.
* ``CASSTOR_CONSISTENCY``: the one consistency level of every casstor read
  and write (default QUORUM, LOCAL_QUORUM when ``CASSTOR_LOCAL_DC`` is set),
  so a file never points at a block held by fewer replicas than its rows.
  Only QUORUM, LOCAL_QUORUM, EACH_QUORUM and ALL are accepted.

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

import contextlib
import os
import socket
import ssl
import sys
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

from cassandra import (AuthenticationFailed, ConsistencyLevel, OperationTimedOut, ProtocolVersion, Timeout,
                       Unauthorized, UnresolvableContactPoints)
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable, Session
from cassandra.connection import ConnectionException
from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy, TokenAwarePolicy

from casstor_ops.cluster.envvars import MAX_PORT, env_port, require_range
from casstor_ops.cluster.libev_connection import QueuedLibevConnection
from casstor_ops.cluster.secret_files import read_password_file
from casstor_ops.errors import EXIT_AUTH, EXIT_TIMEOUT, EXIT_UNAUTHORISED, EXIT_UNREACHABLE, EXIT_USAGE, CasstorError

REQUEST_TIMEOUT_S = 30.0
# The driver leaves Nagle's algorithm on: a request larger than one TCP segment (a 4 KiB block) waits for the
# node's delayed ACK before its last segment goes out, ~40 ms on Linux. Measured one request at a time (a
# small PUT's pattern): a 4 KiB block insert took 46 ms of wall time with Nagle, 3.8 ms without.
SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
# Only levels where every read overlaps every acknowledged write in at least one replica: the commit
# timestamp proof and the exact counts (stats, reclaim) rest on it. ONE, TWO, ANY... would let a read miss
# a committed head or block.
CONSISTENCY_LEVELS = ("QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL")


PASSWORD_FILE_SETTING = "CASSTOR_PASSWORD_FILE"


@dataclass(frozen=True)
class Endpoint:
    """Everything needed to open a session; picklable, so Spark executors get a copy.

    ``password_file`` (read at each connect) is how a password should come;
    ``password`` holds one given in ``CASSTOR_PASSWORD``, and travels with
    the endpoint.
    """

    hosts: tuple[str, ...]
    port: int
    embedded: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_ca: str | None = None
    local_dc: str | None = None
    consistency: str = "QUORUM"
    password_file: str | None = None

    @property
    def description(self) -> str:
        return ",".join(f"{h}:{self.port}" for h in self.hosts)

    def secret(self) -> str | None:
        """The password: ``password``, else the content of ``password_file`` (usage error if it cannot be used)."""
        if self.password is not None or self.password_file is None:
            return self.password
        return read_password_file(self.password_file, PASSWORD_FILE_SETTING)


def endpoint_from_env() -> Endpoint:
    """The cluster the environment names (see the module docstring).

    Example: with ``CASSTOR_NODES=10.0.0.1,10.0.0.2:9142`` the endpoint's
    hosts are both addresses, port 9142. A malformed ``CASSTOR_NODES`` or
    ``CASSTOR_PORT``, or a ``CASSTOR_CONSISTENCY`` outside
    :data:`CONSISTENCY_LEVELS`, raises CasstorError (exit 2, one line).
    """
    local_dc = os.environ.get("CASSTOR_LOCAL_DC") or None
    consistency = os.environ.get("CASSTOR_CONSISTENCY", "LOCAL_QUORUM" if local_dc else "QUORUM").strip().upper()
    if consistency not in CONSISTENCY_LEVELS:
        raise CasstorError(f"CASSTOR_CONSISTENCY={consistency}: casstor needs {', '.join(CONSISTENCY_LEVELS[:-1])} "
                           f"or {CONSISTENCY_LEVELS[-1]} (weaker levels break its commit proof and exact counts)",
                           EXIT_USAGE)
    nodes = os.environ.get("CASSTOR_NODES", "").strip()
    if not nodes:
        return _embedded_endpoint(local_dc, consistency)
    hosts, ports = [], set()
    for item in nodes.split(","):
        host, _, port = item.strip().partition(":")
        if not host or (port and not (port.isascii() and port.isdigit())):
            raise CasstorError(f"CASSTOR_NODES={nodes!r}: expected host[:port],host[:port],...", EXIT_USAGE)
        hosts.append(host)
        if port:
            ports.add(require_range(f"CASSTOR_NODES={nodes!r}: port {port}", int(port), 1, MAX_PORT))
    if len(ports) > 1:
        raise CasstorError(f"CASSTOR_NODES={nodes!r}: all hosts must use one CQL port", EXIT_USAGE)
    port = ports.pop() if ports else env_port("CASSTOR_PORT", 9042)
    username, password, password_file = _credentials_from_env()
    return Endpoint(tuple(hosts), port, False, username, password, os.environ.get("CASSTOR_SSL_CA") or None,
                    local_dc, consistency, password_file)


def _credentials_from_env() -> tuple[str | None, str | None, str | None]:
    """``CASSTOR_USERNAME``, ``CASSTOR_PASSWORD`` and ``CASSTOR_PASSWORD_FILE`` (checked readable now, read at
    connect); both passwords at once, or a password file without a user name, is a usage error."""
    username = os.environ.get("CASSTOR_USERNAME") or None
    password = os.environ.get("CASSTOR_PASSWORD") or None
    password_file = os.environ.get(PASSWORD_FILE_SETTING) or None
    if password_file is None:
        return username, password, None
    if password is not None:
        raise CasstorError(f"both CASSTOR_PASSWORD and {PASSWORD_FILE_SETTING} are set: unset one "
                           f"(the file keeps the password off the environment)", EXIT_USAGE)
    if username is None:
        raise CasstorError(f"{PASSWORD_FILE_SETTING} is set but CASSTOR_USERNAME is not: name the role "
                           f"the password is for", EXIT_USAGE)
    read_password_file(password_file, PASSWORD_FILE_SETTING)  # a bad file is one line now, not at the first connect
    return username, None, password_file


def _embedded_endpoint(local_dc: str | None, consistency: str) -> Endpoint:
    """The local cluster's endpoint; a secure one's TLS CA and ``casstor`` role (or the role the environment names)."""
    from casstor_ops.cluster.launcher import LocalCluster  # the embedded node only: a remote store never loads it
    from casstor_ops.cluster.secure_home import CLIENT_ROLE

    local = LocalCluster()
    hosts, port = tuple(local.contact_points), local.ports.cql
    secure = local.secure_home
    if secure is None:
        return Endpoint(hosts, port, True, local_dc=local_dc, consistency=consistency)
    username, password, password_file = _credentials_from_env()
    if username is None or (password is None and password_file is None):
        username, password, password_file = CLIENT_ROLE, None, str(secure.password_file(CLIENT_ROLE))
    return Endpoint(hosts, port, True, username, password, os.environ.get("CASSTOR_SSL_CA") or str(secure.ca_cert),
                    local_dc, consistency, password_file)


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
    # while 128 MiB wait (casstor_ops.cluster.libev_connection), and casstor_ops.store.inflight bounds what is
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
    """Open a session (starting the embedded node first when ``start``; ``schema_metadata`` as :func:`open_cluster`).

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
            return cluster.connect()
        except Exception:
            if cluster is not None:
                cluster.shutdown()
            raise


@contextlib.contextmanager
def reported_as_user_errors(endpoint: Endpoint, doing: str | None = None) -> Iterator[None]:
    """Raise the one-line error of :func:`connect_error` for what fails inside; anything else as it is.

    ``doing`` None: opening a session; else the request, e.g. ``"read the store's settings"``.

    Example::

        >>> with reported_as_user_errors(endpoint_of(session), "read the store's settings"):  # doctest: +SKIP
        ...     session.execute(statement)
    """
    try:
        yield
    except Exception as err:
        user_error = connect_error(err, endpoint, doing)
        if user_error is None:
            raise
        raise user_error from None


def connect_error(err: Exception, endpoint: Endpoint, doing: str | None = None) -> CasstorError | None:
    """The one-line error, with its exit code, for a failure to open a session, or of a request when ``doing``
    names it; None if it is not one.

    Checked in this order over the failure (or, for ``NoHostAvailable``, each
    host's failure): credentials refused (``EXIT_AUTH``); permission refused
    (``EXIT_UNAUTHORISED``: "not authorised to <doing>"); no answer in time,
    from the client or the coordinator (``EXIT_TIMEOUT``); every host refused,
    reset, unresolvable or failed TLS, or for a request no host up at all
    (``EXIT_UNREACHABLE``). Anything else (a protocol error, a bug) is None,
    so the caller re-raises it with its traceback.

    Example::

        >>> refused = NoHostAvailable("Unable to connect", {"127.0.0.1:1": ConnectionRefusedError(111, "refused")})
        >>> connect_error(refused, Endpoint(("127.0.0.1",), 1, False)).exit_code
        6
    """
    causes = list(err.errors.values()) if isinstance(err, NoHostAvailable) else [err]
    where = endpoint.description
    refused = next((cause for cause in causes if isinstance(cause, AuthenticationFailed)), None)
    if refused is not None:
        return CasstorError(f"Cassandra at {where} refused the credentials: {refused}; "
                            f"check CASSTOR_USERNAME and {PASSWORD_FILE_SETTING} (or CASSTOR_PASSWORD)", EXIT_AUTH)
    denied = next((cause for cause in causes if isinstance(cause, Unauthorized)), None)
    if denied is not None:
        return CasstorError(f"not authorised to {doing or 'connect'}: {denied}; grant the role "
                            f"{endpoint.username or '(anonymous)'} the permission, or use another "
                            f"CASSTOR_USERNAME", EXIT_UNAUTHORISED)
    late = next((cause for cause in causes if isinstance(cause, (OperationTimedOut, Timeout))), None)
    if late is not None:
        action = f" to {doing}" if doing else ""
        return CasstorError(f"Cassandra at {where} did not answer in time{action}: {late}; the node may be "
                            f"overloaded or still starting, or a firewall drops the packets: retry, or see the "
                            f"node's log", EXIT_TIMEOUT)
    unreachable = (ConnectionException, OSError, UnresolvableContactPoints)  # OSError covers refused, reset, TLS
    # A request finds no host at all when the driver has marked every one down (a connect always tries some).
    all_down = doing is not None and isinstance(err, NoHostAvailable) and not causes
    if all_down or (causes and all(isinstance(cause, unreachable) for cause in causes)):
        reason = ("no host is up" if all_down else
                  "no host name resolves" if isinstance(err, UnresolvableContactPoints) else causes[0])
        return CasstorError(f"cannot reach Cassandra at {where}: {reason}; {_reach_fix(causes, endpoint)}",
                            EXIT_UNREACHABLE)
    return None


def _reach_fix(causes: list[Exception], endpoint: Endpoint) -> str:
    """What to check when no host could be reached: the CA for an untrusted certificate, TLS for a node that
    reset a plain-text connection, else the hosts (or the local node's status)."""
    if any("CERTIFICATE_VERIFY_FAILED" in str(cause) for cause in causes):
        return (f"the nodes' certificate is not trusted: CASSTOR_SSL_CA={endpoint.ssl_ca} must be the CA that "
                f"signed it, and it must name the address connected to")
    if endpoint.ssl_ca is None and any(isinstance(cause, ConnectionResetError) for cause in causes):
        return "if the nodes accept TLS clients only, set CASSTOR_SSL_CA to the CA file that signed their certificates"
    if endpoint.embedded:
        return "run 'casstor cluster status' and see the node's log"
    return "check the hosts or unset CASSTOR_NODES to use the local node"
