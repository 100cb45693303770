"""``casstor init``: create the keyspaces and tables, record the settings."""

from __future__ import annotations

import argparse
import sys

from cassandra.cluster import Session

from casstor_ops.cluster.connection import connect
from casstor_ops.store.blocks.codec import DEFAULT_COMPRESSION, BlockCodec
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.schema import (CHUNK_LIMITS, Replication, StoreSettings, init_store, replication_map,
                                      set_compression)


def _replication(rf: int | None, dcs: str | None) -> Replication | None:
    if dcs:
        return Replication.parse_dcs(dcs)
    return Replication.simple(rf) if rf is not None else None


def log_progress(msg: str) -> None:
    """An upgrade's progress, on stderr: stdout keeps the settings lines scripts read."""
    print(msg, file=sys.stderr, flush=True)


def _init(args: argparse.Namespace) -> int:
    # Bad arguments are reported before anything is started or connected.
    data, meta = _replication(args.data_rf, args.data_dc), _replication(args.meta_rf, args.meta_dc)
    compression = BlockCodec.parse(args.compression).spec if args.compression else None
    sizes = {name: getattr(args, name) for name in (*CHUNK_LIMITS, "inline_max") if getattr(args, name) is not None}
    # No size given: a new store gets the defaults, an existing one keeps its own (init_store).
    wanted = StoreSettings(**sizes, compression=compression or DEFAULT_COMPRESSION) if sizes else None
    session = connect()
    try:
        settings = init_store(session, data, meta, wanted, log=log_progress)
        if compression and settings.compression != compression:  # an existing store, or a new one made without sizes
            settings = set_compression(session, compression)
        print_settings(session, settings)
    finally:
        session.cluster.shutdown()
    return 0


def print_settings(session: Session, settings: StoreSettings) -> None:
    """The lines ``casstor init`` (and ``casstor upgrade``) end with: each keyspace's replication, the settings."""
    for ks in (DATA_KS, META_KS):
        print(f"{ks}: {replication_map(session, ks)}")
    print(f"store settings: hash {settings.hash}, chunker {settings.chunker} "
          f"min/avg/max {settings.chunk_min}/{settings.chunk_avg}/{settings.chunk_max}, "
          f"schema v{settings.schema_version}, new blocks compressed {settings.compression}, "
          f"{f'files up to {settings.inline_max} bytes inline' if settings.inline_max else 'no inline files'}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="create the store's keyspaces and tables (idempotent)")
    for ks in ("data", "meta"):
        group = p.add_mutually_exclusive_group()
        group.add_argument(f"--{ks}-rf", type=int, help=f"SimpleStrategy RF of casstor_{ks} "
                           "(default: 1 on one node, 3 with 3+ nodes up)")
        group.add_argument(f"--{ks}-dc", metavar="DC:RF,...", help=f"NetworkTopologyStrategy for casstor_{ks}")
    defaults = StoreSettings()
    for name, what in (("chunk_min", "minimum"), ("chunk_avg", "average"), ("chunk_max", "maximum")):
        p.add_argument(f"--{name.replace('_', '-')}", type=int,
                       help=f"FastCDC {what} chunk in bytes (default for a new store: {getattr(defaults, name)}; an "
                            "existing store keeps its own, and refuses others)")
    p.add_argument("--compression", metavar="zstd:LEVEL|none",
                   help=f"how new blocks are stored (default for a new store: {DEFAULT_COMPRESSION}; an existing "
                        "store keeps its own unless given; stored blocks never change)")
    p.add_argument("--inline-max", type=int, metavar="BYTES",
                   help="keep files of 1 to BYTES bytes (at most the chunk minimum) in their head row: one write "
                        "to store, one read to restore, but never deduplicated (default 0: none; fixed when the "
                        "store is made, see docs/schema.md)")
    p.set_defaults(func=_init)
