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
import uuid
from datetime import datetime
from collections.abc import Callable
from typing import Any, NoReturn, Sequence, TypeVar

from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.store.history.points_in_time import parse_time, parse_version
from casstor_ops.store.trees.locations import parse_storage_options, read_storage_options_file, secret_keys


Number = TypeVar("Number", int, float)


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# Where a filesystem's credentials go instead of a command line (ps, /proc/*/cmdline, shell history).
SECRETS_GO_ELSEWHERE = ("a secret on the command line is visible to other users (ps) and kept in shell history: "
                        "put it in a 0600 file given with --storage-options-file, or let the filesystem find it "
                        "(for s3://: AWS_PROFILE and ~/.aws/credentials, the AWS_* variables, an instance role)")


class _StorageOptions(argparse.Action):
    """Collects repeated ``KEY=VALUE`` values into one dict, over the options file's (a bad pair or a secret is a
    usage error)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option_string: str | Sequence[Any] | None = None) -> None:
        try:
            given = parse_storage_options([value])
        except CasstorError as err:
            parser.error(str(err))
        for key in secret_keys(given):  # named, never its value
            parser.error(f"--storage-option {key}=…: {SECRETS_GO_ELSEWHERE}")
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest) or {}), **given})


class _StorageOptionsFile(argparse.Action):
    """Reads the options of a private file into the same dict; ``--storage-option`` pairs win, in any order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option_string: str | Sequence[Any] | None = None) -> None:
        try:
            from_file = read_storage_options_file(value)
        except CasstorError as err:
            parser.error(str(err))
        setattr(namespace, self.dest, {**from_file, **(getattr(namespace, self.dest) or {})})


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` (repeatable, no secret) and ``--storage-options-file PATH`` (a 0600 file:
    where keys go) for a job that takes a URL: ``args.storage_options``, a dict.

    Example::

        >>> parser = OneLineParser(prog="jobs/ingest.py"); add_storage_options(parser)
        >>> parser.parse_args(["--storage-option", "anon=true"]).storage_options
        {'anon': True}
        >>> parser.parse_args(["--storage-option", "secret=abc"])                 # doctest: +SKIP
        jobs/ingest.py: error: --storage-option secret=…: a secret on the command line is visible ...
    """
    parser.add_argument("--storage-option", dest="storage_options", action=_StorageOptions, default={},
                        metavar="KEY=VALUE",
                        help="an option of a URL's filesystem (e.g. endpoint_url=http://127.0.0.1:9000); a VALUE "
                             "that is JSON is decoded; repeatable; no secret (key, secret, token, ...): those go "
                             "in --storage-options-file")
    parser.add_argument("--storage-options-file", dest="storage_options", action=_StorageOptionsFile,
                        metavar="PATH",
                        help="a file only its owner may read (chmod 600) holding a URL filesystem's options, keys "
                             "included: a JSON object or KEY=VALUE lines")


def bounded(kind: Callable[[str], Number], low: Number, high: Number, what: str) -> Callable[[str], Number]:
    """An argparse ``type``: ``kind(text)`` (``int`` or ``float``) from ``low`` to ``high``, else a usage error
    naming ``what`` was expected.

    Example::

        >>> bounded(int, 1, 16, "1 to 16 processes")("4")
        4
        >>> bounded(int, 1, 16, "1 to 16 processes")("17")
        Traceback (most recent call last):
        argparse.ArgumentTypeError: 17: expected 1 to 16 processes
    """
    def parse(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text}: expected {what}")
        return value
    return parse


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number of at least 1 (a usage error otherwise)."""
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of at least 1")
    return int(text)


def time_argument(text: str) -> datetime:
    """An argparse ``type``: an ISO 8601 time (no zone: UTC).

    As :func:`~casstor_ops.store.history.points_in_time.parse_time` reads it.
    """
    try:
        return parse_time(text)
    except CasstorError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def version_argument(text: str) -> uuid.UUID:
    """An argparse ``type``: a version as ``casstor ls --versions`` prints it."""
    try:
        return parse_version(text)
    except CasstorError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
