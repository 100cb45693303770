"""What a secured cluster hands its clients, checked without a node: the export lines, the Spark connector's and
cassandra-stress's settings (never the password), the Java truststore, the node's TLS configuration and
directory modes, and the driver address Spark gets. openssl and keytool run for real."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pyspark import SparkConf

from casstor_ops.cluster.certificates import ensure_ca, ensure_node_keystore
from casstor_ops.cluster.connection import Endpoint
from casstor_ops.cluster.install import spark_conf_dir
from casstor_ops.cluster.java_tls import CIPHER_SUITES, truststore_for
from casstor_ops.cluster.launcher import ClusterPorts, Node
from casstor_ops.cluster.roles import ClientSettings, _password
from casstor_ops.cluster.secret_files import write_secret
from casstor_ops.cluster.secure_home import CLIENT_ROLE, SecureHome
from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.lab.stress import credentials_env, stress_command
from casstor_ops.spark.session import connector_auth, connector_tls, driver_address

PASSWORD = "Zq3-secret_value"


@pytest.fixture()
def secured(tmp_path: Path) -> Endpoint:
    """An endpoint as `cluster start --secure` exports it: a role, its password file and the cluster's CA."""
    home = SecureHome(tmp_path / "cluster")
    ensure_ca(home)
    write_secret(home.password_file(CLIENT_ROLE), PASSWORD)
    return Endpoint(("127.0.0.1",), 9042, False, CLIENT_ROLE, ssl_ca=str(home.ca_cert),
                    password_file=str(home.password_file(CLIENT_ROLE)))


def test_exports_evaluate_in_a_shell_and_hold_no_password(tmp_path: Path) -> None:
    """Checks `eval` of the export lines sets every CASSTOR_* setting (a path with a space and a quote too),
    unsets CASSTOR_PASSWORD, and that the lines carry the password file's path, not a password."""
    odd = tmp_path / "my home's" / "casstor.password"
    settings = ClientSettings(("127.0.0.1", "127.0.0.2"), 19142, "casstor", odd, tmp_path / "ca.crt")
    script = f'{settings.exports()}\nprintf "%s|" "$CASSTOR_NODES" "$CASSTOR_PORT" "$CASSTOR_USERNAME" ' \
             f'"$CASSTOR_PASSWORD_FILE" "$CASSTOR_SSL_CA" "${{CASSTOR_PASSWORD-unset}}"'
    out = subprocess.run(["bash", "-c", 'eval "$(cat)"'], input=script, capture_output=True, text=True,
                         env={**os.environ, "CASSTOR_PASSWORD": "old"}, timeout=60).stdout
    assert out == f"127.0.0.1,127.0.0.2|19142|casstor|{odd}|{tmp_path / 'ca.crt'}|unset|"
    assert "PASSWORD=" not in settings.exports().replace("PASSWORD_FILE=", "")


def test_connector_gets_the_password_files_path_not_the_password(secured: Endpoint) -> None:
    """Checks the Spark settings name casstor's auth factory and the file, and that no value holds the password."""
    settings = {**connector_auth(secured), **connector_tls(secured)}
    assert settings["spark.cassandra.auth.conf.factory"] == "casstor.auth.SparkAuthConfFactory"
    assert settings["spark.casstor.auth.passwordFile"] == secured.password_file
    assert not any(PASSWORD in value for value in settings.values())
    assert "spark.cassandra.auth.password" not in settings
    assert settings["spark.cassandra.connection.ssl.enabledAlgorithms"] == ",".join(CIPHER_SUITES)
    assert Path(settings["spark.cassandra.connection.ssl.trustStore.path"]).stat().st_mode & 0o777 == 0o600


def test_truststore_is_cached_per_ca_content_and_holds_every_certificate(secured: Endpoint, tmp_path: Path) -> None:
    """Checks one truststore per CA content (same path twice), one entry per certificate of a bundle, mode 0600."""
    first = truststore_for(secured.ssl_ca)
    assert truststore_for(secured.ssl_ca) == first
    other = SecureHome(tmp_path / "other")
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(Path(secured.ssl_ca).read_bytes() + ensure_ca(other).read_bytes())
    store = truststore_for(str(bundle))
    assert store != first and store.stat().st_mode & 0o777 == 0o600
    listing = subprocess.run(["keytool", "-list", "-keystore", str(store), "-storepass", "casstor-truststore"],
                             capture_output=True, text=True, timeout=120).stdout
    assert "contains 2 entries" in listing


def test_a_ca_file_without_certificates_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    with pytest.raises(CasstorError, match="no PEM certificate") as caught:
        truststore_for(str(tmp_path / "ca.pem"))
    assert caught.value.exit_code == EXIT_USAGE


def test_stress_gets_credentials_from_its_environment_never_its_command_line(secured: Endpoint,
                                                                          tmp_path: Path) -> None:
    """Checks the cassandra-stress command names the auth provider and the truststore but no password, and that
    the provider's environment names the password file."""
    cmd = stress_command(Path("/p.yaml"), "ops(insert=1)", population=10, threads=1, n=10, duration_s=None,
                         endpoint=secured, hdr_file=tmp_path / "x.hdr")
    assert not any(PASSWORD in arg for arg in cmd) and not any(arg.startswith("password=") for arg in cmd)
    assert "auth-provider=casstor.auth.StressAuthProvider" in cmd and "-transport" in cmd
    assert credentials_env(secured) == {"CASSTOR_USERNAME": CLIENT_ROLE, "CASSTOR_PASSWORD_FILE": secured.password_file}


@pytest.mark.parametrize("master, loopback", [
    ("local[*]", True), ("local[2]", True), ("local", True), ("spark://127.0.0.1:7077", True),
    ("spark://localhost:7077", True), ("spark://10.0.0.5:7077", False), ("yarn", False),
    ("k8s://https://10.0.0.9:6443", False),
])
def test_driver_is_pinned_to_loopback_only_for_masters_on_this_machine(master: str, loopback: bool) -> None:
    """Checks each kind of master; a remote one gets Spark's default driver address (no setting)."""
    pinned = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    assert driver_address(master, SparkConf(loadDefaults=False)) == (pinned if loopback else {})
    submitted = SparkConf(loadDefaults=False).set("spark.master", master)  # spark-submit --master
    assert driver_address(None, submitted) == (pinned if loopback else {})


def test_a_driver_host_given_to_spark_wins() -> None:
    assert driver_address("local[2]", SparkConf(loadDefaults=False).set("spark.driver.host", "10.0.0.7")) == {}


def test_spark_defaults_do_not_pin_the_driver_address() -> None:
    """Checks what `make setup` wrote: no driver host or bind address, no SPARK_LOCAL_IP; casstor's auth jar."""
    defaults = (spark_conf_dir() / "spark-defaults.conf").read_text()
    assert "spark.driver.host" not in defaults and "spark.driver.bindAddress" not in defaults
    assert "SPARK_LOCAL_IP" not in (spark_conf_dir() / "spark-env.sh").read_text()
    assert "casstor-auth-" in defaults


def test_secure_node_config_and_directories(tmp_path: Path) -> None:
    """Injects umask 0; checks every node directory is 0700, and a secure node's config asks for passwords,
    permissions and TLS-only clients with a keystore whose certificate the CA signed for the node's address."""
    home = SecureHome(tmp_path / "cluster")
    old = os.umask(0)
    try:
        node = Node(home.home / "node2", 2, ClusterPorts(), 512, home)
        node._write_config("127.0.0.1:7000")
        plain = Node(home.home / "node3", 3, ClusterPorts(), 512)
        plain._write_config("127.0.0.1:7000")
    finally:
        os.umask(old)
    for root in (node.root, plain.root):
        dirs = [root, *(p for p in root.rglob("*") if p.is_dir())]
        assert len(dirs) >= 10 and {p.stat().st_mode & 0o777 for p in dirs} == {0o700}
    assert home.tls_dir.stat().st_mode & 0o777 == 0o700
    assert {p.name: p.stat().st_mode & 0o777 for p in home.tls_dir.iterdir()} == \
        {"ca.crt": 0o644, "ca.key": 0o600, "node2.pem": 0o600}
    yaml = (node.root / "conf" / "cassandra.yaml").read_text()
    for line in ("authenticator: PasswordAuthenticator", "authorizer: CassandraAuthorizer", "optional: false",
                 f"keystore: {home.node_keystore(2)}"):
        assert line in yaml
    assert "authenticator" not in (plain.root / "conf" / "cassandra.yaml").read_text()
    verify = subprocess.run(["openssl", "verify", "-CAfile", str(home.ca_cert), "-verify_ip", "127.0.0.2",
                             str(home.node_keystore(2))], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_ca_certificate_without_its_key_is_never_replaced(tmp_path: Path) -> None:
    """Injects the loss of ``ca.key`` after node 1's keystore was made; checks that a new node's keystore is
    refused with one line and that ``ca.crt``, which clients and node 1 trust, is kept as it was."""
    home = SecureHome(tmp_path / "cluster")
    ensure_node_keystore(home, 1, "127.0.0.1")
    trusted = home.ca_cert.read_bytes()
    home.ca_key.unlink()
    with pytest.raises(CasstorError, match=r"^the cluster's CA key .*ca.key is missing, so no certificate"):
        ensure_node_keystore(home, 2, "127.0.0.2")
    assert home.ca_cert.read_bytes() == trusted and not home.node_keystore(2).exists()
    assert ensure_node_keystore(home, 1, "127.0.0.1").exists()  # an existing node needs no key


def test_role_passwords_must_stay_safe_literals(tmp_path: Path) -> None:
    """Injects a password file holding a quote; checks it is refused (it would end the CQL string literal), and
    that a missing file is made 0600 with a new password."""
    path = write_secret(tmp_path / "evil.password", "x' AND SUPERUSER = true --")
    with pytest.raises(CasstorError, match="only the characters A-Z a-z 0-9 _ - are accepted"):
        _password(path)
    made = _password(tmp_path / "new.password")
    assert len(made) >= 32 and (tmp_path / "new.password").stat().st_mode & 0o777 == 0o600
