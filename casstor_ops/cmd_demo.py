"""``casstor demo``: the main job on the embedded local node (``make demo``)."""

from __future__ import annotations

import argparse

from .connection import connect
from .launcher import LocalCluster
from .schema import init_store


def _demo(args: argparse.Namespace) -> int:
    cluster = LocalCluster()
    cluster.start()
    session = connect()
    try:
        init_store(session)
    finally:
        session.cluster.shutdown()
    print(cluster.nodetool("status").rstrip())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("demo", help="start the local node, initialise the store, show status").set_defaults(func=_demo)
