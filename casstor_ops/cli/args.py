"""The argument parser of every command, job and benchmark: a usage mistake is one line and exit 2.

argparse prints a usage block of several lines before its error, and jobs
run under ``spark-submit`` (which mixes stderr into stdout) or in scripts
that look for the ``casstor:`` line; one line, naming the program and
``--help``, is what every entry point of casstor prints instead.

Example::

    >>> parser = OneLineParser(prog="jobs/reclaim.py")
    >>> _ = parser.add_argument("--dry-run", action="store_true")
    >>> parser.parse_args(["--bogus"])                    # doctest: +SKIP
    jobs/reclaim.py: error: unrecognized arguments: --bogus (see 'jobs/reclaim.py --help')

Failures: a usage error exits with :data:`~casstor_ops.errors.EXIT_USAGE`
(2) after that line on stderr; ``--help`` prints the help and exits 0.
Sub-command parsers get the same behaviour with
``add_subparsers(parser_class=OneLineParser)``.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from casstor_ops.errors import EXIT_USAGE


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number of at least 1 (a usage error otherwise)."""
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of at least 1")
    return int(text)
