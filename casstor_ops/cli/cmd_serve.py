"""``casstor serve``: the store over HTTP (PUT, GET, HEAD, DELETE of ``/<ID>``); see :mod:`casstor_ops.serve`.

Example::

    $ casstor serve --port 8080 --token-file ~/.casstor-token &
    $ curl -H "Authorization: Bearer $(cat ~/.casstor-token)" -T a.jpg http://127.0.0.1:8080/photos/a.jpg

Failures: a port in use, an unreadable or empty token file, or an
unreachable store end the command with one ``casstor:`` line before it
serves anything.
"""

from __future__ import annotations

import argparse

from casstor_ops.serve.auth import read_token
from casstor_ops.serve.shared_lease import DEFAULT_REUSE_S


def _serve(args: argparse.Namespace) -> int:
    # Here, not at the top: the server stack (uvicorn, Starlette) is a fifth of the import time of every other
    # command, which only registers this one.
    from casstor_ops.serve.server import ServeOptions, serve

    token = read_token(args.token_file) if args.token_file else None
    serve(ServeOptions(args.host, args.port, token, args.read_only, args.lease_reuse))
    return 0


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text}: expected a port from 0 (any free one) to 65535")
    return port


def _seconds(text: str) -> float:
    seconds = float(text)
    if not 0 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text}: expected seconds from 0 to 3600")
    return seconds


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the store over HTTP: PUT/GET/HEAD/DELETE /<ID>")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=_port, default=8080, help="port to listen on (default: 8080; 0: any free port)")
    p.add_argument("--token-file", metavar="PATH",
                   help="require 'Authorization: Bearer <token>' with the token in PATH (401 otherwise)")
    p.add_argument("--read-only", action="store_true", help="refuse PUT and DELETE (405)")
    p.add_argument("--lease-reuse", type=_seconds, default=DEFAULT_REUSE_S, metavar="SECONDS",
                   help=f"lend one writer lease to the writes of this many seconds (default: {DEFAULT_REUSE_S:g}); "
                        f"an offline reclaim waits at most this long plus the longest write")
    p.set_defaults(func=_serve)
