"""Where a client connects: an :class:`Endpoint`, read from the environment (:func:`endpoint_from_env`).

* ``CASSTOR_NODES`` unset: the local cluster of :mod:`casstor_ops.cluster.launcher`
  (loaded only then). A secure one (``casstor cluster start --secure``) is
  reached through TLS as its ``casstor`` role, with the CA and password
  file of its home, unless ``CASSTOR_USERNAME`` and a password name another role.
* ``CASSTOR_NODES=h1,h2[:port]``: an existing cluster. Optional
  ``CASSTOR_PORT``, ``CASSTOR_USERNAME`` with ``CASSTOR_PASSWORD_FILE`` (a
  file holding the password, readable by its owner only) or
  ``CASSTOR_PASSWORD``, ``CASSTOR_SSL_CA`` (a CA file: enables TLS, and the
  nodes' certificates must name their addresses), ``CASSTOR_LOCAL_DC``.
* ``CASSTOR_CONSISTENCY``: the one consistency level of every casstor read
  and write (default QUORUM, LOCAL_QUORUM when ``CASSTOR_LOCAL_DC`` is set),
  so a file never points at a block held by fewer replicas than its rows.
  Only QUORUM, LOCAL_QUORUM, EACH_QUORUM and ALL are accepted.

The password itself is never kept in an :class:`Endpoint` read from a
password file: the endpoint holds the file's path and reads it when it
connects, so an endpoint pickled to Spark executors carries no secret.

Example::

    >>> endpoint_from_env().description        # with CASSTOR_NODES=10.0.0.1,10.0.0.2:9142  # doctest: +SKIP
    '10.0.0.1:9142,10.0.0.2:9142'

Failures: a malformed setting (``CASSTOR_NODES``, ``CASSTOR_PORT``,
``CASSTOR_CONSISTENCY``, a password file that cannot be used, both
passwords at once) is a :class:`~casstor_ops.errors.CasstorError` with the
usage exit code (2), one line naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from casstor_ops.cluster.envvars import MAX_PORT, env_port, require_range
from casstor_ops.cluster.secret_files import read_password_file
from casstor_ops.errors import EXIT_USAGE, CasstorError

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
