"""TLS for casstor's Java clients (Spark Cassandra Connector, cassandra-stress): a truststore from ``CASSTOR_SSL_CA``.

The Python driver reads the PEM CA file itself; the Java clients need a
Java truststore. :func:`truststore_for` derives a PKCS12 truststore from the
CA file with Java 17's ``keytool`` (every certificate of the file, so a CA
bundle works), and caches it as ``$CASSTOR_CACHE/truststores/<sha256 of the
PEM>.p12`` (0600 in a 0700 directory): a changed CA file gets a new one, and
executors of a cluster sharing the cache find it at the same path. Its
password, :data:`TRUSTSTORE_PASSWORD`, is a published constant: the file holds
only public certificates, and its mode, not that password, keeps others from
replacing them.

:data:`CIPHER_SUITES` are the suites the Java clients offer: TLS 1.3 and the
ECDHE suites of TLS 1.2 (the connector's own default, ``TLS_RSA_*``, cannot
use the EC keys of the local cluster's certificates).

Example::

    >>> truststore_for("/h/cluster/tls/ca.crt")        # doctest: +SKIP
    PosixPath('/root/.cache/casstor/truststores/5f1c....p12')

Failures: a CA file that cannot be read or holds no certificate is a usage
error (exit 2, one line naming ``CASSTOR_SSL_CA``); keytool missing,
failing or hanging is a one-line :class:`~casstor_ops.errors.CasstorError`
(:mod:`.tools`).
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

from casstor_ops.cluster import paths as layout
from casstor_ops.cluster.jvm import java17_home
from casstor_ops.cluster.tools import run_tool
from casstor_ops.errors import EXIT_USAGE, CasstorError

TRUSTSTORE_PASSWORD = "casstor-truststore"
KEYTOOL_TIMEOUT_S = 120
CIPHER_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256",
                 "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                 "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


def truststore_for(ca_file: str) -> Path:
    """The cached PKCS12 truststore holding every certificate of the PEM file ``ca_file``, made if missing."""
    try:
        pem = Path(ca_file).read_bytes()
    except OSError as err:
        raise CasstorError(f"CASSTOR_SSL_CA={ca_file}: {err.strerror or err}", EXIT_USAGE) from None
    certificates = _CERTIFICATE.findall(pem)
    if not certificates:
        raise CasstorError(f"CASSTOR_SSL_CA={ca_file}: no PEM certificate in the file", EXIT_USAGE)
    store_dir = layout.private_dir(layout.cache_dir() / "truststores")
    truststore = store_dir / f"{hashlib.sha256(pem).hexdigest()[:32]}.p12"
    if not truststore.exists():
        with tempfile.TemporaryDirectory(dir=store_dir) as tmp:
            made = Path(tmp) / "truststore.p12"
            for index, certificate in enumerate(certificates):
                _import(made, f"ca-{index}", certificate, Path(tmp))
            made.chmod(0o600)
            made.replace(truststore)
    return truststore


def _import(truststore: Path, alias: str, certificate: bytes, work: Path) -> None:
    cert_file = work / f"{alias}.pem"
    cert_file.write_bytes(certificate + b"\n")
    keytool = java17_home() / "bin" / "keytool"
    run_tool([str(keytool), "-importcert", "-noprompt", "-alias", alias, "-file", str(cert_file),
              "-keystore", str(truststore), "-storetype", "PKCS12", "-storepass", TRUSTSTORE_PASSWORD],
             "keytool importing the certificates of CASSTOR_SSL_CA", KEYTOOL_TIMEOUT_S)
