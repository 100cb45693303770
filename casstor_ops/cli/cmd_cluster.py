"""``casstor cluster start [--nodes N] [--secure] | stop | status``: the local cluster.

A secure cluster's start prints its client settings on stdout as
``export`` lines (``eval "$(casstor cluster start --secure)"``), so its
progress goes to stderr.

Example::

    $ eval "$(casstor cluster start --secure)"      # progress on stderr, the export lines evaluated
    $ casstor cluster status
    local cluster /root/.local/share/casstor/cluster  CQL port 9042  secure (passwords, TLS clients)
      node1  127.0.0.1    up        pid 4242

Failures (one ``casstor:`` line each): ``--nodes`` outside 1..254 or a bad
``--heap-mb``, exit 2; ``--secure`` on a cluster running without it, exit 1
(stop it first); a node that does not come up, exit 1; on a secure cluster,
an admin password file that no longer lets ``casstor_admin`` log in (the
default superuser already dropped), exit 7, and a password file holding
characters outside ``A-Z a-z 0-9 _ -``, exit 2. ``status`` exits 1 unless
every node is up.
"""

from __future__ import annotations

import argparse
import sys

from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.cluster.roles import set_up_roles
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import ensure_keyspaces


def _start(args: argparse.Namespace) -> int:
    cluster = LocalCluster(heap_mb=args.heap_mb)
    secure = args.secure or cluster.secure
    log = (lambda msg: print(msg, file=sys.stderr)) if secure else print
    cluster.start(nodes=args.nodes, log=log, secure=secure)
    if secure:
        print(set_up_roles(cluster, (DATA_KS, META_KS), ensure_keyspaces, log).exports())
    return 0


def _stop(args: argparse.Namespace) -> int:
    cluster = LocalCluster()
    if not any(s.pid for s in cluster.status()):
        print("no local node is running")
    cluster.stop()
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = LocalCluster()
    statuses = cluster.status()
    if not statuses:
        print(f"no local cluster under {cluster.home} (start one with 'casstor cluster start')")
        return 1
    secure = "  secure (passwords, TLS clients)" if cluster.secure else ""
    print(f"local cluster {cluster.home}  CQL port {cluster.ports.cql}{secure}")
    for s in statuses:
        print(f"  node{s.index}  {s.address:<12} {s.state:<9} pid {s.pid or '-'}")
    if args.nodetool and cluster.is_up():
        first_up = next(s.index for s in statuses if s.state == "up")
        print(cluster.nodetool("status", node=first_up).rstrip())
    return 0 if all(s.state == "up" for s in statuses) else 1


def register(sub: argparse._SubParsersAction) -> None:
    cluster = sub.add_parser("cluster", help="start, stop or inspect the local Cassandra cluster")
    actions = cluster.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start local nodes on 127.0.0.1..N, one at a time")
    start.add_argument("--nodes", type=int, default=None, help="number of nodes (default: 1, or as many as exist)")
    start.add_argument("--heap-mb", type=int, default=None, help="heap per node in MiB (default 1024)")
    start.add_argument("--secure", action="store_true",
                       help="passwords, permissions and TLS clients (kept for good); print the client settings "
                            "as export lines for eval")
    start.set_defaults(func=_start)
    actions.add_parser("stop", help="stop the nodes this launcher started").set_defaults(func=_stop)
    status = actions.add_parser("status", help="show each node's state (exit 1 unless all are up)")
    status.add_argument("--nodetool", action="store_true", help="also print 'nodetool status'")
    status.set_defaults(func=_status)
