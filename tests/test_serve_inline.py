"""``casstor serve`` on a store that keeps small files inline: the PUT on the driver's callbacks, the GET from
the head row.

One server per test, started once the ``inline_store`` fixture set the store's ``inline_max`` (a server reads
the store's settings when it starts).
"""

from __future__ import annotations

import os

from casstor_ops.store.api import Store
from casstor_ops.store.engine.inline import inline_hash

from .serve_support import Server, at_once
from .support import INLINE_MAX, flip_inline


def _etag(content: bytes) -> str:
    return f'"{inline_hash(content).hex()}"'


def test_small_puts_are_kept_inline_and_read_back(inline_store) -> None:
    """Checks unconditional PUTs of 1 B, a random body and INLINE_MAX bytes (the callback path) and a
    conditional one (If-Match: the worker path) are committed inline with the file hash as ETag, and that GET,
    HEAD and a Range answer them byte-exact; and that INLINE_MAX + 1 bytes go to blocks."""
    server = Server("--lease-reuse", "2")
    try:
        store = Store(inline_store)
        bodies = {"one": b"x", "random": os.urandom(5000), "max": os.urandom(INLINE_MAX)}
        for key, body in bodies.items():
            status, headers, _ = server.request("PUT", f"in/{key}", body)
            assert status == 200 and headers["etag"] == _etag(body)
            assert store.stat(f"in/{key}").is_inline
            status, headers, got = server.request("GET", f"in/{key}")
            assert (status, got, headers["etag"]) == (200, body, _etag(body))
        assert server.request("HEAD", "in/random")[1]["content-length"] == "5000"
        status, _, got = server.request("GET", "in/random", headers={"Range": "bytes=100-199"})
        assert (status, got) == (206, bodies["random"][100:200])
        newer = os.urandom(300)
        status, headers, _ = server.request("PUT", "in/random", newer, {"If-Match": _etag(bodies["random"])})
        assert status == 200 and store.stat("in/random").is_inline and server.request("GET", "in/random")[2] == newer
        assert server.request("PUT", "in/random", b"late", {"If-Match": _etag(bodies["random"])})[0] == 412
        big = os.urandom(INLINE_MAX + 1)
        assert server.request("PUT", "in/big", big)[0] == 200
        assert not store.stat("in/big").is_inline and server.request("GET", "in/big")[2] == big
    finally:
        code, log = server.stop()
    assert code == 0, log


def test_concurrent_inline_puts_of_one_key_leave_one_whole_body(inline_store) -> None:
    """Sends 8 PUTs of one key at once (the callback path, each with its own body); checks every one is
    answered 200, and the head left is one of the bodies, whole, with its own hash."""
    server = Server("--lease-reuse", "2")
    try:
        bodies = [os.urandom(3000 + n) for n in range(8)]
        statuses = at_once(lambda n: server.request("PUT", "in/race", bodies[n])[0], 8)
        assert statuses == [200] * 8
        status, headers, got = server.request("GET", "in/race")
        assert status == 200 and got in bodies and headers["etag"] == _etag(got)
    finally:
        code, log = server.stop()
    assert code == 0, log


def test_damaged_inline_content_is_502_never_served(inline_store) -> None:
    """Injects a flipped bit in an inline file's content in its head row; checks the GET is 502 with the
    one-line cause, never the damaged bytes."""
    server = Server("--lease-reuse", "2", "--cache-mb", "0")
    try:
        assert server.request("PUT", "in/bad", os.urandom(2000))[0] == 200
        flip_inline(inline_store, "in/bad")
        status, _, body = server.request("GET", "in/bad")
        assert status == 502 and b"does not match its file hash" in body and body.count(b"\n") == 1
    finally:
        code, log = server.stop()
    assert code == 0, log
