"""A local cluster's ports, and probing them: is a node answering, is a port free to bind.

Every node of one cluster shares the CQL and storage port numbers (each on
its own address, 127.0.0.*i*) and gets a JMX port of its own on loopback.
A port held only by closing connections (TIME_WAIT, e.g. a nodetool
connection to the JMX port of a node just stopped) is waited for until
the kernel releases it; one that a live socket holds is an error at once.

Example::

    >>> ClusterPorts.from_env()                         # with no CASSTOR_*_PORT set  # doctest: +SKIP
    ClusterPorts(cql=9042, storage=7000, jmx_base=7199)
    >>> require_free("127.0.0.1", 9042, "CASSTOR_CQL_PORT")  # doctest: +SKIP

Failures: a malformed ``CASSTOR_CQL_PORT`` / ``CASSTOR_STORAGE_PORT`` /
``CASSTOR_JMX_PORT`` is a usage error (exit 2); a port in use is a
:class:`~casstor_ops.errors.CasstorError` naming the setting to change.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from casstor_ops.cluster.envvars import env_port
from casstor_ops.errors import CasstorError

PORT_RELEASE_S = 65.0   # a TCP TIME_WAIT lasts 60 s on Linux


@dataclass(frozen=True)
class ClusterPorts:
    """Ports shared by every node of one local cluster (each node has its own address)."""

    cql: int = 9042
    storage: int = 7000
    jmx_base: int = 7199  # node i uses jmx_base + i - 1: JMX binds 127.0.0.1 only

    @classmethod
    def from_env(cls) -> "ClusterPorts":
        return cls(
            cql=env_port("CASSTOR_CQL_PORT", cls.cql),
            storage=env_port("CASSTOR_STORAGE_PORT", cls.storage),
            jmx_base=env_port("CASSTOR_JMX_PORT", cls.jmx_base),
        )


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts a TCP connection on ``host:port`` within ``timeout`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _proc_net_addresses(host: str, port: int) -> set[str]:
    """How ``/proc/net/tcp`` and ``tcp6`` show ``host:port`` and the wildcard addresses on ``port``: IPv4 as one
    little-endian word, IPv6 as four (so ``::ffff:a.b.c.d``, a v4-mapped address, ends with ``a.b.c.d``'s word)."""
    ipv4 = socket.inet_aton(host)[::-1].hex().upper()
    return {f"{address}:{port:04X}" for address in
            (ipv4, "00000000", "0" * 32, "0000000000000000FFFF0000" + ipv4)}


def _listening(host: str, port: int) -> bool:
    """Whether a TCP socket listens (state 0A) on ``host:port`` or on a wildcard address, IPv4 or IPv6 (a
    dual-stack listener on ``:::port`` shows only in ``/proc/net/tcp6``)."""
    wanted = _proc_net_addresses(host, port)
    lines = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):  # no IPv6 in this kernel: no tcp6
            lines += Path(table).read_text().splitlines()[1:]
    return any(fields[1] in wanted and fields[3] == "0A" for fields in map(str.split, lines))


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            return True
        except OSError:
            return False


def require_free(host: str, port: int, setting: str) -> None:
    """Return once ``host:port`` can be bound; CasstorError naming ``setting`` (the variable that chooses the port)
    if a process holds it."""
    # A port no socket listens on is held by closing connections (TIME_WAIT: a nodetool connection to the JMX
    # port of a node just stopped), which Cassandra's JMX cannot bind past: they end within a minute.
    deadline = time.monotonic() + PORT_RELEASE_S
    while not _port_free(host, port) and not _listening(host, port) and time.monotonic() < deadline:
        time.sleep(1)
    if not _port_free(host, port):
        raise CasstorError(
            f"port {host}:{port} is already in use by another process: stop that process "
            f"or choose another port with {setting}")
