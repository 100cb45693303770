"""The roles of a secured local cluster: Cassandra's default superuser replaced, and the ``casstor`` role.

Run by ``casstor cluster start`` on a secure cluster once its nodes are up;
every step is idempotent, so a start interrupted half-way is completed by
the next one:

1. ``casstor_admin`` logs in with the password of its 0600 file (made on
   first use). The first time it cannot, the default superuser
   ``cassandra``/``cassandra`` creates it (a superuser), and ``cassandra``
   is dropped: a password everyone knows never outlives the first start.
2. ``system_auth`` is replicated to min(3, nodes) nodes (SimpleStrategy) and
   repaired when that changed, so a login does not fail when one node is down.
3. ``casstor`` gets a login and the password of its own 0600 file (the file
   is the truth: the role is created with it, or given it again when the
   role cannot log in with it, e.g. the file was replaced), and on
   each casstor keyspace CREATE (tables), ALTER, SELECT and MODIFY: no
   other keyspace, no DROP, no role management. The keyspaces are made
   here, as the admin, because creating a keyspace is a cluster-wide
   permission (``CREATE ON ALL KEYSPACES``) and a grant needs its keyspace to
   exist; ``casstor init`` then makes the tables as ``casstor``.

Role statements cannot be prepared and take the password as a CQL string
literal: only passwords of :func:`~casstor_ops.cluster.secret_files.new_password`'s
alphabet are accepted, never anything that could end the literal.

Example::

    >>> settings = set_up_roles(cluster, ["casstor_data", "casstor_meta"], make_keyspaces, log)  # doctest: +SKIP
    >>> print(settings.exports())                                                             # doctest: +SKIP
    export CASSTOR_NODES=127.0.0.1
    ...

Failures: a password file that no longer matches its role, or a node that
refuses, raise the one-line :class:`~casstor_ops.errors.CasstorError` of
:func:`~casstor_ops.cluster.connection.connect_error` (e.g. ``EXIT_AUTH``).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cassandra.cluster import Session

from casstor_ops.cluster.connection import PASSWORD_FILE_SETTING, Endpoint, connect
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.secret_files import new_password, read_password_file, write_secret
from casstor_ops.cluster.secure_home import ADMIN_ROLE, CLIENT_ROLE, SecureHome
from casstor_ops.errors import EXIT_AUTH, EXIT_USAGE, CasstorError

DEFAULT_SUPERUSER = "cassandra"  # Cassandra's own, password 'cassandra': dropped once the admin role exists
CLIENT_PERMISSIONS = ("CREATE", "ALTER", "SELECT", "MODIFY")
MAX_AUTH_RF = 3
DEFAULT_ROLE_WAIT_S = 60.0  # a node answers CQL a moment before it has created its default superuser
_PASSWORD_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class ClientSettings:
    """What a client of the secured cluster needs, as ``CASSTOR_*`` settings."""

    hosts: tuple[str, ...]
    port: int
    username: str
    password_file: Path
    ssl_ca: Path

    def exports(self) -> str:
        """``export CASSTOR_...=...`` lines a POSIX shell can ``eval`` (values quoted; no password among them)."""
        settings = {"CASSTOR_NODES": ",".join(self.hosts), "CASSTOR_PORT": str(self.port),
                    "CASSTOR_USERNAME": self.username, PASSWORD_FILE_SETTING: str(self.password_file),
                    "CASSTOR_SSL_CA": str(self.ssl_ca)}
        lines = [f"export {name}={shlex.quote(value)}" for name, value in settings.items()]
        return "\n".join(["unset CASSTOR_PASSWORD", *lines])


def set_up_roles(cluster: LocalCluster, keyspaces: Sequence[str], make_keyspaces: Callable[[Session], None],
                 log: Callable[[str], None]) -> ClientSettings:
    """Replace the default superuser, make the ``casstor`` role and its keyspaces (``make_keyspaces``, run as the
    admin, creates the missing ones); the client settings of the ``casstor`` role."""
    home = cluster.secure_home
    if home is None:
        raise CasstorError(f"the local cluster {cluster.home} is not secure: start it with --secure")
    session = _admin_session(cluster, home, log)
    try:
        _replicate_auth(session, cluster, log)
        session.execute(f"DROP ROLE IF EXISTS {DEFAULT_SUPERUSER}")
        client_password = _password(home.password_file(CLIENT_ROLE))
        client = _endpoint(cluster, home, CLIENT_ROLE, password_file=str(home.password_file(CLIENT_ROLE)))
        if not _role_exists(session, CLIENT_ROLE) or not _can_log_in(client):
            _set_role(session, CLIENT_ROLE, client_password, superuser=False)
        make_keyspaces(session)
        for keyspace in keyspaces:
            for permission in CLIENT_PERMISSIONS:
                session.execute(f"GRANT {permission} ON KEYSPACE {keyspace} TO {CLIENT_ROLE}")
    finally:
        session.cluster.shutdown()
    log(f"role {CLIENT_ROLE}: {', '.join(CLIENT_PERMISSIONS)} on {', '.join(keyspaces)}; "
        f"superuser {ADMIN_ROLE} (password in {home.password_file(ADMIN_ROLE)})")
    return ClientSettings(tuple(cluster.contact_points), cluster.ports.cql, CLIENT_ROLE,
                          home.password_file(CLIENT_ROLE), home.ca_cert)


def _password(path: Path) -> str:
    """The password in ``path`` (a new one written there first if it is missing), checked to be a safe literal."""
    if not path.exists():
        write_secret(path, new_password())
    password = read_password_file(str(path), "password file")
    if not _PASSWORD_ALPHABET.fullmatch(password):
        raise CasstorError(f"password file {path}: only the characters A-Z a-z 0-9 _ - are accepted; "
                           f"remove the file to have a new password made", EXIT_USAGE)
    return password


def _endpoint(cluster: LocalCluster, home: SecureHome, username: str, **credential: str) -> Endpoint:
    """The cluster as ``username``, with ``credential`` either ``password=`` or ``password_file=``."""
    return Endpoint(tuple(cluster.contact_points), cluster.ports.cql, False, username,
                    ssl_ca=str(home.ca_cert), **credential)


def _admin_session(cluster: LocalCluster, home: SecureHome, log: Callable[[str], None]) -> Session:
    """A session as the admin role, which the default superuser creates the first time."""
    password = _password(home.password_file(ADMIN_ROLE))
    admin = _endpoint(cluster, home, ADMIN_ROLE, password_file=str(home.password_file(ADMIN_ROLE)))
    try:
        return connect(admin, start=False)
    except CasstorError as err:
        if err.exit_code != EXIT_AUTH:
            raise
    log(f"replacing the default superuser '{DEFAULT_SUPERUSER}' with '{ADMIN_ROLE}'")
    default = _default_superuser_session(_endpoint(cluster, home, DEFAULT_SUPERUSER, password=DEFAULT_SUPERUSER))
    try:
        _set_role(default, ADMIN_ROLE, password, superuser=True)
    finally:
        default.cluster.shutdown()
    return connect(admin, start=False)


def _default_superuser_session(endpoint: Endpoint) -> Session:
    """A session as ``cassandra``, waiting a little for a node that has just started to create that role."""
    deadline = time.monotonic() + DEFAULT_ROLE_WAIT_S
    while True:
        try:
            return connect(endpoint, start=False)
        except CasstorError as err:
            if err.exit_code != EXIT_AUTH:
                raise
            if time.monotonic() > deadline:
                raise CasstorError(f"cannot log in as {ADMIN_ROLE} (its password file does not match the role) "
                                   f"nor as the default superuser (already dropped): {err}", err.exit_code) from None
        time.sleep(1)


def _role_exists(session: Session, role: str) -> bool:
    return any(row.role == role for row in session.execute("LIST ROLES"))


def _can_log_in(endpoint: Endpoint) -> bool:
    try:
        connect(endpoint, start=False, schema_metadata=False).cluster.shutdown()
    except CasstorError as err:
        if err.exit_code != EXIT_AUTH:
            raise
        return False
    return True


def _set_role(session: Session, role: str, password: str, superuser: bool) -> None:
    """Create ``role`` (a login) with ``password``, or give it ``password`` if it exists (its file was replaced).

    Never both: Cassandra refuses a second password change within 5 s of the first.
    """
    if _role_exists(session, role):
        session.execute(f"ALTER ROLE {role} WITH PASSWORD = '{password}'")
    else:
        session.execute(f"CREATE ROLE {role} WITH LOGIN = true AND SUPERUSER = {str(superuser).lower()} "
                        f"AND PASSWORD = '{password}'")


def _replicate_auth(session: Session, cluster: LocalCluster, log: Callable[[str], None]) -> None:
    """Replicate ``system_auth`` to min(3, nodes) nodes; repair it when that changed, so every replica has the roles.

    Repaired on every node that is up: a node's repair covers only the ranges it replicates, which with 4 nodes
    or more is not all of them.
    """
    wanted = min(MAX_AUTH_RF, cluster.node_count)
    strategy = session.cluster.metadata.keyspaces["system_auth"].replication_strategy
    if getattr(strategy, "replication_factor", wanted) == wanted:
        return
    session.execute("ALTER KEYSPACE system_auth WITH replication = "
                    f"{{'class': 'SimpleStrategy', 'replication_factor': {wanted}}}")
    log(f"system_auth now replicated {wanted} times; repairing it")
    for node in cluster.status():
        if node.state == "up":
            cluster.nodetool("repair", "--full", "system_auth", node=node.index)
