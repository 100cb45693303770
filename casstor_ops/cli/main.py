"""The ``casstor`` command: a thin dispatcher over the ``cmd_*`` modules.

Each ``cmd_*`` module registers its sub-commands with ``register(subparsers)``
and sets ``func`` on them; the logic lives in the library modules. Errors a
user can act on are printed as one line, ``casstor: <message>``, with the
error's exit code; a failing Cassandra request likewise. Usage mistakes
exit 2 with one line.

The ``casstor`` script (and ``python -m casstor_ops.cli.main``) runs
:func:`run`: :func:`main`, then :func:`end` ends the process without the
interpreter's teardown once the command is done. :func:`main` returns its
exit status to a caller in the same process (tests, ``jobs/*``).

Example::

    $ casstor init --data-rf 1 --meta-rf 1
    $ casstor store ./photo.jpg photos/2024/photo.jpg
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
from typing import NoReturn

from casstor_ops.cli import cmd_cluster, cmd_demo, cmd_files, cmd_history, cmd_init, cmd_maintenance, cmd_serve
from casstor_ops.cli.args import OneLineParser
from casstor_ops.errors import run_reporting_errors
from casstor_ops.store.gc_thresholds import apply_gc_thresholds
from casstor_ops.store.malloc_thresholds import apply_malloc_thresholds

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
    apply_malloc_thresholds()
    args = build_parser().parse_args(argv)
    try:
        return run_reporting_errors(lambda: args.func(args))
    except BrokenPipeError:  # e.g. 'casstor restore ID - | head'
        return 1


def run() -> NoReturn:
    """The ``casstor`` command: :func:`main`, then :func:`end` with its status."""
    end(main())


def end(status: int) -> NoReturn:
    """End this process with ``status`` once a command is done: the exit functions run (the driver's, logging's,
    multiprocessing's, Spark's) and stdout and stderr are flushed, as at any exit, and the interpreter's own
    teardown is skipped (``os._exit``). That teardown collected and freed every object and module one by one
    and cost every command 40-80 ms (medians of 7 alternated runs: ``casstor ls`` 0.306 against 0.237 s, a
    restore of four release tars 1.545 against 1.469 s): nothing of the store's depends on it, its writes
    acknowledged, its files synced and closed before the command returns. While a thread other than a daemon
    one still runs, the interpreter's own exit is taken instead (it waits for that thread).

    Example: ``end(0)`` ends the process with 0. Failures: a stdout closed under it (``casstor ls | head``)
    ends the process with 1 if ``status`` was 0, without a traceback."""
    if any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()
           if thread is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()  # noqa: SLF001 - what the interpreter's exit runs first, without its teardown
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # its reader gone (BrokenPipeError): as main answers it
            status = status or 1
    os._exit(status)


if __name__ == "__main__":
    run()
