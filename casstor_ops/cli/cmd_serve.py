"""``casstor serve``: the store over HTTP (PUT, GET, HEAD, DELETE of ``/<ID>``); see :mod:`casstor_ops.serve`.

Example::

    $ casstor serve --port 8080 --token-file ~/.casstor-token --metrics-port 9100 &
    $ curl -H "Authorization: Bearer $(cat ~/.casstor-token)" -T a.jpg http://127.0.0.1:8080/photos/a.jpg

Failures: a bad flag value (exit 2), a port in use, a token file that is
unreadable, empty or readable by others (exit 2), a certificate that cannot
be loaded, or an unreachable store end the command with one ``casstor:``
line before it serves anything.
"""

from __future__ import annotations

import argparse

from casstor_ops.cli.args import bounded
from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.serve.policy import BODY_TIMEOUT_S, HEADER_TIMEOUT_S, Policy
from casstor_ops.serve.auth import read_token
from casstor_ops.serve.s3.addressing import Addressing
from casstor_ops.serve.content_cache import DEFAULT_CACHE_BYTES
from casstor_ops.serve.shared_lease import DEFAULT_REUSE_S

MAX_WORKERS = 64
MB = 1024 * 1024
MAX_CACHE_MB = 1024 * 1024


def _serve(args: argparse.Namespace) -> int:
    if args.key and not args.cert:
        raise CasstorError("serve: --key needs --cert (the certificate it belongs to)", EXIT_USAGE)
    # Here, not at the top: the server stack (uvicorn, Starlette) is a fifth of the import time of every other
    # command, which only registers this one.
    from casstor_ops.serve.server import ServeOptions, serve

    token = read_token(args.token_file) if args.token_file else None
    policy = Policy(token, args.read_only, args.max_body, args.require_length, args.body_timeout)
    return serve(ServeOptions(args.host, args.port, policy, args.lease_reuse, args.workers, args.cert, args.key,
                              args.access_log, args.metrics_port, args.cache_mb * MB, args.header_timeout,
                              _s3_secrets(args), _s3_addressing(args)))


def _s3_secrets(args: argparse.Namespace) -> dict[str, str] | None:
    """The S3 users of ``--s3 --s3-credentials FILE`` (None without ``--s3``)."""
    if not args.s3:
        if args.s3_credentials:
            raise CasstorError("serve: --s3-credentials needs --s3", EXIT_USAGE)
        return None
    if not args.s3_credentials:
        raise CasstorError("serve: --s3 needs --s3-credentials FILE (an aws credentials file, chmod 600)",
                           EXIT_USAGE)
    if args.token_file:
        raise CasstorError("serve: --s3 authenticates with --s3-credentials, not --token-file", EXIT_USAGE)
    from casstor_ops.serve.s3.credentials import read_credentials

    return read_credentials(args.s3_credentials)


def _s3_addressing(args: argparse.Namespace) -> Addressing:
    """The domains of ``--s3-domain`` (virtual-hosted-style buckets); only with ``--s3``."""
    if args.s3_domain and not args.s3:
        raise CasstorError("serve: --s3-domain needs --s3", EXIT_USAGE)
    return Addressing.parse(args.s3_domain or ())


_port = bounded(int, 0, 65535, "a port from 0 (any free one) to 65535")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the store over HTTP: PUT/GET/HEAD/DELETE /<ID>")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=_port, default=8080, help="port to listen on (default: 8080; 0: any free port)")
    p.add_argument("--workers", type=bounded(int, 1, MAX_WORKERS, f"1 to {MAX_WORKERS} processes"), default=1,
                   metavar="N", help="worker processes sharing the port, each with its own connection to "
                                     "Cassandra (default: 1)")
    p.add_argument("--token-file", metavar="PATH",
                   help="require 'Authorization: Bearer <token>' with the token in PATH (401 otherwise); PATH "
                        "must be a file only its owner may read (chmod 600)")
    p.add_argument("--read-only", action="store_true", help="refuse PUT and DELETE (405)")
    p.add_argument("--max-body", type=bounded(int, 0, 2 ** 63 - 1, "a number of bytes"), metavar="BYTES",
                   help="refuse a PUT body longer than BYTES (413), by its Content-Length or as it arrives")
    p.add_argument("--require-length", action="store_true",
                   help="refuse a PUT without Content-Length, i.e. a chunked body (411)")
    p.add_argument("--header-timeout", type=bounded(float, 0.1, 3600, "seconds from 0.1 to 3600"),
                   default=HEADER_TIMEOUT_S, metavar="SECONDS",
                   help=f"close a connection whose request headers have not all arrived within SECONDS (408; "
                        f"default: {HEADER_TIMEOUT_S:g})")
    p.add_argument("--body-timeout", type=bounded(float, 0.1, 86400, "seconds from 0.1 to 86400"),
                   default=BODY_TIMEOUT_S, metavar="SECONDS",
                   help=f"refuse a PUT whose whole body has not arrived within SECONDS (408, nothing stored; "
                        f"default: {BODY_TIMEOUT_S:g}); a client that sends nothing for 60 s is refused sooner")
    p.add_argument("--cert", metavar="PEM", help="serve HTTPS with this certificate (chain)")
    p.add_argument("--key", metavar="PEM", help="the certificate's private key (default: in the --cert file)")
    p.add_argument("--access-log", action="store_true", help="log one line per request (off by default: it "
                                                             "costs throughput)")
    p.add_argument("--metrics-port", type=_port, metavar="PORT",
                   help="serve GET /metrics (Prometheus text) on this port of --host (0: any free port)")
    p.add_argument("--lease-reuse", type=bounded(float, 0, 3600, "seconds from 0 to 3600"),
                   default=DEFAULT_REUSE_S, metavar="SECONDS",
                   help=f"lend one writer lease to the writes of this many seconds (default: {DEFAULT_REUSE_S:g}); "
                        f"an offline reclaim waits at most this long plus the longest write")
    p.add_argument("--cache-mb", type=bounded(int, 0, MAX_CACHE_MB, f"MiB from 0 to {MAX_CACHE_MB}"),
                   default=DEFAULT_CACHE_BYTES // MB, metavar="MIB",
                   help=f"keep up to MIB of recently read files of at most 1 MiB in each worker, so the next GET of "
                        f"one reads only its head (default: {DEFAULT_CACHE_BYTES // MB}; 0: none)")
    p.add_argument("--s3", action="store_true",
                   help="speak the S3 API (path-style http://HOST:PORT/BUCKET/KEY, AWS Signature Version 4) "
                        "instead of PUT/GET/HEAD/DELETE /<ID>; see docs/s3.md")
    p.add_argument("--s3-credentials", metavar="FILE",
                   help="the S3 users: an aws CLI credentials file ([name] with aws_access_key_id and "
                        "aws_secret_access_key), readable only by its owner (chmod 600)")
    p.add_argument("--s3-domain", metavar="DOMAIN", action="append",
                   help="with --s3: also answer virtual-hosted-style requests, http://BUCKET.DOMAIN:PORT/KEY (needs "
                        "a DNS name *.DOMAIN for this server; repeatable); path-style requests are always answered")
    p.set_defaults(func=_serve)
