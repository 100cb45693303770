"""Byte counts for people: the binary unit that fits, and ``12.34 MiB``-style text.

A module of its own, with no imports, so that reports which only print a
few sizes (``jobs/reclaim.py``) do not load pandas and matplotlib with the
dedup report's plotting code.

Example::

    >>> human_bytes(3 << 20)
    '3.00 MiB'
    >>> byte_unit(5_000)
    ('KiB', 1024)

Never raises for an ``int``; ``None`` (a figure not measured) shows as ``-``.
"""

from __future__ import annotations

_UNITS = [("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40)]


def byte_unit(largest: float) -> tuple[str, int]:
    """The binary unit that shows ``largest`` with 1-4 integer digits (``B`` below 1 KiB, at most ``TiB``).

    Example::

        >>> byte_unit(1 << 30)
        ('GiB', 1073741824)
    """
    name, size = _UNITS[0]
    for name_i, size_i in _UNITS:
        if largest >= size_i:
            name, size = name_i, size_i
    return name, size


def human_bytes(n: int | None) -> str:
    """``n`` in its :func:`byte_unit` with two decimals; whole bytes below 1 KiB, ``-`` for ``None``.

    Example::

        >>> human_bytes(1536), human_bytes(512), human_bytes(None)
        ('1.50 KiB', '512 B', '-')
    """
    if n is None:
        return "-"
    name, size = byte_unit(n)
    return f"{n} B" if size == 1 else f"{n / size:.2f} {name}"
