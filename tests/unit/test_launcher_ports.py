"""The launcher's check for a listener on a node's port (``/proc/net/tcp`` and ``tcp6``), with real sockets."""

from __future__ import annotations

import socket

import pytest

from casstor_ops.cluster.ports import _listening


@pytest.mark.parametrize("family, address", [
    (socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0"),
    (socket.AF_INET6, "::"),                  # dual-stack wildcard, as Java listens by default: only in tcp6
    (socket.AF_INET6, "::ffff:127.0.0.1"),    # v4-mapped: only in tcp6
], ids=["v4", "v4-wildcard", "dual-stack-wildcard", "v4-mapped"])
def test_a_listener_is_seen_whichever_table_shows_it(family: socket.AddressFamily, address: str) -> None:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((address, 0))
        port = sock.getsockname()[1]
        assert not _listening("127.0.0.1", port)  # bound, not yet listening
        sock.listen()
        assert _listening("127.0.0.1", port)
    assert not _listening("127.0.0.1", port)
