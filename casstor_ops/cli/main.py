"""The ``casstor`` command: a thin dispatcher over the ``cmd_*`` modules.

Each ``cmd_*`` module registers its sub-commands with ``register(subparsers)``
and sets ``func`` on them; the logic lives in the library modules. Errors a
user can act on are printed as one line, ``casstor: <message>``, with the
error's exit code; a failing Cassandra request likewise. Usage mistakes
exit 2 with one line.

Example::

    $ casstor init --data-rf 1 --meta-rf 1
    $ casstor store ./photo.jpg photos/2024/photo.jpg
"""

from __future__ import annotations

import argparse
import sys

from casstor_ops.cli import cmd_cluster, cmd_demo, cmd_files, cmd_history, cmd_init, cmd_maintenance, cmd_serve
from casstor_ops.cli.args import OneLineParser
from casstor_ops.errors import run_reporting_errors
from casstor_ops.store.gc_thresholds import apply_gc_thresholds

# In the order their sub-commands are listed by 'casstor --help'.
COMMAND_MODULES = [cmd_cluster, cmd_init, cmd_files, cmd_history, cmd_maintenance, cmd_serve, cmd_demo]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="casstor", description="Deduplicating file store on Apache Cassandra.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    apply_gc_thresholds()
    args = build_parser().parse_args(argv)
    try:
        return run_reporting_errors(lambda: args.func(args))
    except BrokenPipeError:  # e.g. 'casstor restore ID - | head'
        return 1


if __name__ == "__main__":
    sys.exit(main())
