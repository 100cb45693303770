"""The local cluster's TLS certificates: one CA, and a key and certificate per node, made with openssl.

The CA (``tls/ca.crt``, ``tls/ca.key``) is made once per cluster home, an
ECDSA P-256 key and a self-signed certificate valid ten years. Each node
gets a P-256 key and a certificate signed by that CA for its own address
(``subjectAltName = IP:127.0.0.i``, server authentication only), written
with the CA certificate after it as the PEM keystore Cassandra's
``PEMBasedSslContextFactory`` reads (``tls/node<i>.pem``). Clients trust the
CA (``CASSTOR_SSL_CA``) and check the address: the Python driver verifies
the node's IP against the certificate. Existing files are kept, so a
restart or a new node never invalidates what clients already trust.

Keys never leave ``tls/`` (0700, keys 0600); openssl writes into a
temporary directory inside it, renamed into place, so an interrupted run
leaves no half-made key that a later start would trust.

Example::

    >>> tls = SecureHome(Path("/h/cluster"))              # doctest: +SKIP
    >>> ensure_node_keystore(tls, 1, "127.0.0.1")          # doctest: +SKIP
    PosixPath('/h/cluster/tls/node1.pem')

Failures: a CA certificate whose key is missing when a node needs a new
certificate, and openssl missing, failing or hanging, raise
:class:`~casstor_ops.errors.CasstorError` with one line (:mod:`.tools`).
"""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path

from casstor_ops.cluster.paths import private_dir
from casstor_ops.cluster.secure_home import SecureHome
from casstor_ops.cluster.tools import run_tool
from casstor_ops.errors import CasstorError

VALID_DAYS = "3650"
OPENSSL_TIMEOUT_S = 120
_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-noenc"]


def _openssl(args: list[str], cwd: Path) -> None:
    run_tool(["openssl", *args], f"openssl {args[0]}", OPENSSL_TIMEOUT_S, cwd=cwd, install="apt-get install openssl")


def ensure_ca(tls: SecureHome) -> Path:
    """The cluster's CA certificate, made (with its key) unless it exists; with it, its key must exist too.

    An existing ``ca.crt`` is never replaced: clients trust it and the
    nodes' keystores were signed by its key. A key without a certificate is
    what an interrupted first run leaves: both are made again.
    """
    if tls.ca_cert.exists():
        if not tls.ca_key.exists():
            raise CasstorError(f"the cluster's CA key {tls.ca_key} is missing, so no certificate can be made for a "
                               f"new node: restore it, or remove {tls.tls_dir} to have a new CA and node "
                               f"certificates made (clients must then trust the new {tls.ca_cert.name})")
        return tls.ca_cert
    with tempfile.TemporaryDirectory(dir=private_dir(tls.tls_dir)) as tmp:
        _openssl(["req", "-x509", *_KEY, "-keyout", "ca.key", "-out", "ca.crt", "-days", VALID_DAYS,
                  "-subj", f"/CN=casstor local CA {secrets.token_hex(4)}",  # each home's CA its own name
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign"], Path(tmp))
        (Path(tmp) / "ca.key").chmod(0o600)
        (Path(tmp) / "ca.crt").chmod(0o644)  # public; openssl would leave it as the umask says
        (Path(tmp) / "ca.key").replace(tls.ca_key)
        (Path(tmp) / "ca.crt").replace(tls.ca_cert)
    return tls.ca_cert


def ensure_node_keystore(tls: SecureHome, index: int, address: str) -> Path:
    """Node ``index``'s PEM keystore for ``address``, made unless it exists, signed by the CA (made if need be)."""
    keystore = tls.node_keystore(index)
    if keystore.exists():
        return keystore
    ca = ensure_ca(tls)
    with tempfile.TemporaryDirectory(dir=tls.tls_dir) as tmp:
        work = Path(tmp)
        _openssl(["req", "-x509", *_KEY, "-keyout", "node.key", "-out", "node.crt", "-days", VALID_DAYS,
                  "-subj", f"/CN={address}", "-CA", str(ca), "-CAkey", str(tls.ca_key),
                  "-addext", f"subjectAltName=IP:{address}",
                  "-addext", "basicConstraints=critical,CA:FALSE",
                  "-addext", "extendedKeyUsage=serverAuth"], work)
        pem = work / "node.pem"
        pem.touch(mode=0o600)
        pem.write_text("".join(p.read_text() for p in (work / "node.key", work / "node.crt", ca)))
        pem.replace(keystore)
    return keystore
