"""Numeric settings (ports, heap size, node count): a bad value is one line, never a traceback.

An environment variable unset or empty means the default. Anything else
must be a decimal integer within the setting's range, or
:class:`~casstor_ops.errors.CasstorError` is raised with the usage exit
code (2), naming the setting, its value and the range.

Example::

    >>> env_port("CASSTOR_PORT", 9042)                 # with CASSTOR_PORT unset  # doctest: +SKIP
    9042
    >>> env_port("CASSTOR_PORT", 9042)                 # with CASSTOR_PORT=abc    # doctest: +SKIP
    Traceback (most recent call last):
    casstor_ops.errors.CasstorError: CASSTOR_PORT='abc': expected a whole number from 1 to 65535
"""

from __future__ import annotations

import os

from casstor_ops.errors import EXIT_USAGE, CasstorError

MAX_PORT = 65535


def require_range(label: str, value: int | None, low: int, high: int) -> int:
    """``value`` if it is in ``low..high``; ``label`` names the setting in the error.

    Example: ``require_range("--nodes 0", 0, 1, 254)`` raises CasstorError
    (exit 2) "--nodes 0: expected a whole number from 1 to 254"; ``None``
    (a value that did not parse) is refused the same way.
    """
    if value is None or not low <= value <= high:
        raise CasstorError(f"{label}: expected a whole number from {low} to {high}", EXIT_USAGE)
    return value


def env_int(name: str, default: int, low: int, high: int) -> int:
    """``$name`` as an integer in ``low..high``, or ``default`` when unset or empty.

    Example: ``env_int("CASSTOR_HEAP_MB", 1024, 256, 65536)``. Raises
    CasstorError (exit 2) for a value that is not a whole number in range.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    # int() alone would also take '+5', '1_000' and non-ASCII digits: only plain decimals are settings.
    return require_range(f"{name}={raw!r}", int(raw) if raw.isascii() and raw.isdigit() else None, low, high)


def env_port(name: str, default: int) -> int:
    """``$name`` as a TCP port (1..65535), or ``default`` when unset or empty.

    Example: ``env_port("CASSTOR_CQL_PORT", 9042)``. Raises CasstorError
    (exit 2) for anything else, e.g. ``CASSTOR_CQL_PORT=abc``.
    """
    return env_int(name, default, 1, MAX_PORT)
