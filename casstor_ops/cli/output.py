"""What the commands print: one JSON document, or one line per item (the ``--json`` switch of every command).

Example::

    >>> print_listing([1, 2], lambda n: {"n": n}, lambda n: f"n={n}", as_json=False)
    n=1
    n=2
    0
    >>> print_listing([1], lambda n: {"n": n}, str, as_json=True)
    [{"n": 1}]
    0

Failures: none of its own (a value ``json`` cannot encode raises TypeError: a bug).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TypeVar

Item = TypeVar("Item")


def print_json(value: object) -> None:
    """``value`` as one line of JSON, non-ASCII kept as is (IDs are UTF-8)."""
    print(json.dumps(value, ensure_ascii=False))


def print_listing(items: Iterable[Item], as_dict: Callable[[Item], object], line: Callable[[Item], str],
                  as_json: bool) -> int:
    """``items`` as one JSON list of ``as_dict(item)``, or one ``line(item)`` each; the exit code (0)."""
    if as_json:
        print_json([as_dict(item) for item in items])
    else:
        for item in items:
            print(line(item))
    return 0
