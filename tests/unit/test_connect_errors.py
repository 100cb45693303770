"""Classifying a failure to connect: unreachable, credentials refused, timeout each get their own line and
exit code; anything else is a bug and keeps its traceback. Driver exceptions are constructed, no node is used."""

from __future__ import annotations

import ssl

import pytest
from cassandra import AuthenticationFailed, OperationTimedOut, UnresolvableContactPoints
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionException, ProtocolError

from casstor_ops.cluster import connection
from casstor_ops.cluster.connection import Endpoint, connect_error
from casstor_ops.errors import EXIT_AUTH, EXIT_TIMEOUT, EXIT_UNREACHABLE

REMOTE = Endpoint(("10.0.0.1", "10.0.0.2"), 9042, False, username="app")
LOCAL = Endpoint(("127.0.0.1",), 19042, True)
REFUSED = ConnectionRefusedError(111, "Tried connecting to [('10.0.0.1', 9042)]. Last error: Connection refused")


def _no_host(*causes: Exception) -> NoHostAvailable:
    return NoHostAvailable("Unable to connect to any servers",
                           {f"10.0.0.{i}:9042": cause for i, cause in enumerate(causes, 1)})


@pytest.mark.parametrize("failure", [
    _no_host(REFUSED, REFUSED),
    _no_host(ConnectionException("Connection reset\nby peer"), REFUSED),
    REFUSED,  # the driver raises some socket errors bare
    UnresolvableContactPoints({}),
])
def test_unreachable(failure) -> None:
    """Injects refused, reset, TLS and unresolvable failures; checks EXIT_UNREACHABLE and one line naming the hosts."""
    error = connect_error(failure, REMOTE)
    assert error is not None and error.exit_code == EXIT_UNREACHABLE
    message = str(error)
    assert message.startswith("cannot reach Cassandra at 10.0.0.1:9042,10.0.0.2:9042: ") and "\n" not in message
    assert message.endswith("check the hosts or unset CASSTOR_NODES to use the local node")


def test_untrusted_certificate_points_at_the_ca() -> None:
    """Injects the driver's failed certificate check; checks EXIT_UNREACHABLE and a fix naming CASSTOR_SSL_CA."""
    failure = _no_host(ssl.SSLError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"))
    error = connect_error(failure, Endpoint(("10.0.0.1",), 9042, False, ssl_ca="/etc/other-ca.crt"))
    assert error is not None and error.exit_code == EXIT_UNREACHABLE
    assert str(error).endswith("the nodes' certificate is not trusted: CASSTOR_SSL_CA=/etc/other-ca.crt must be "
                               "the CA that signed it, and it must name the address connected to")


def test_reset_plain_text_connection_suggests_tls() -> None:
    """Injects the reset a TLS-only node gives a plain-text client; checks the fix suggests CASSTOR_SSL_CA, and
    that a TLS client's reset does not."""
    failure = _no_host(ConnectionResetError(104, "Connection reset by peer"))
    assert str(connect_error(failure, REMOTE)).endswith("if the nodes accept TLS clients only, set CASSTOR_SSL_CA "
                                                        "to the CA file that signed their certificates")
    with_tls = Endpoint(("10.0.0.1",), 9042, False, ssl_ca="/etc/ca.crt")
    assert str(connect_error(failure, with_tls)).endswith("check the hosts or unset CASSTOR_NODES to use the "
                                                          "local node")


def test_unreachable_local_node_points_at_its_status() -> None:
    """Injects a refused connection to the embedded node; checks the fix names 'casstor cluster status'."""
    assert str(connect_error(_no_host(REFUSED), LOCAL)).endswith("run 'casstor cluster status' and see the node's log")


@pytest.mark.parametrize("failure", [
    _no_host(AuthenticationFailed("Failed to authenticate to 10.0.0.1:9042: Provided username app and/or "
                                  "password are incorrect")),
    _no_host(REFUSED, AuthenticationFailed("Remote end requires authentication")),  # auth wins over a down host
])
def test_credentials_refused(failure) -> None:
    """Injects AuthenticationFailed (alone, or beside a refused host); checks EXIT_AUTH and the variables to fix."""
    error = connect_error(failure, REMOTE)
    assert error is not None and error.exit_code == EXIT_AUTH
    assert "refused the credentials" in str(error) and "CASSTOR_USERNAME and CASSTOR_PASSWORD" in str(error)


@pytest.mark.parametrize("failure", [
    _no_host(OperationTimedOut("errors=Timed out creating connection (10 seconds), last_host=None")),
    _no_host(REFUSED, OperationTimedOut()),
    OperationTimedOut(errors={"10.0.0.1:9042": "Client request timeout"}),
])
def test_timeout(failure) -> None:
    """Injects OperationTimedOut (wrapped in NoHostAvailable or bare); checks EXIT_TIMEOUT and 'did not answer in time'."""
    error = connect_error(failure, REMOTE)
    assert error is not None and error.exit_code == EXIT_TIMEOUT
    assert str(error).startswith("Cassandra at 10.0.0.1:9042,10.0.0.2:9042 did not answer in time")


@pytest.mark.parametrize("failure", [
    ValueError("a bug"),
    NoHostAvailable("Unable to connect to any servers", {}),
    _no_host(REFUSED, ProtocolError("unexpected frame")),
])
def test_anything_else_is_not_classified(failure) -> None:
    """Injects a plain bug, an empty NoHostAvailable and a protocol error; checks none is dressed as a user error."""
    assert connect_error(failure, REMOTE) is None


def test_connect_keeps_the_traceback_of_a_bug(monkeypatch) -> None:
    """Injects a TypeError from the driver's connect() (it used to become 'cannot reach Cassandra');
    checks it propagates as itself and the half-open cluster is shut down."""
    class BrokenCluster:
        shut_down = False

        def connect(self):
            raise TypeError("bug inside connect")

        def shutdown(self):
            BrokenCluster.shut_down = True

    monkeypatch.setattr(connection, "open_cluster", lambda endpoint, schema_metadata=True: BrokenCluster())
    with pytest.raises(TypeError, match="bug inside connect"):
        connection.connect(REMOTE, start=False)
    assert BrokenCluster.shut_down
