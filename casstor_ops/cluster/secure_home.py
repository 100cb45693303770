"""Where a secured local cluster keeps its TLS material and passwords, and the names of its roles.

``casstor cluster start --secure`` records ``"secure": true`` in the
cluster's ``cluster.json`` and keeps, under the cluster home::

    tls/            0700  ca.crt (the CA clients trust), ca.key, node<i>.pem (node i's key and certificate chain)
    credentials/    0700  casstor_admin.password, casstor.password (0600 each)

Two roles replace Cassandra's default ``cassandra`` superuser (which is
dropped): :data:`ADMIN_ROLE`, a superuser used only by ``cluster start``
(and by whoever needs to administer the cluster), and :data:`CLIENT_ROLE`,
which may use the two casstor keyspaces and nothing else
(:mod:`casstor_ops.cluster.roles`).

Example::

    >>> SecureHome(Path("/h/cluster")).password_file(CLIENT_ROLE)
    PosixPath('/h/cluster/credentials/casstor.password')

Nothing here touches the disk; it never fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ADMIN_ROLE = "casstor_admin"
CLIENT_ROLE = "casstor"


@dataclass(frozen=True)
class SecureHome:
    """The secured files of the local cluster whose home is ``home`` (``$CASSTOR_HOME/cluster``)."""

    home: Path

    @property
    def tls_dir(self) -> Path:
        return self.home / "tls"

    @property
    def credentials_dir(self) -> Path:
        return self.home / "credentials"

    @property
    def ca_cert(self) -> Path:
        return self.tls_dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.tls_dir / "ca.key"

    def node_keystore(self, index: int) -> Path:
        """Node ``index``'s PEM keystore: its private key, its certificate, then the CA's."""
        return self.tls_dir / f"node{index}.pem"

    def password_file(self, role: str) -> Path:
        return self.credentials_dir / f"{role}.password"
