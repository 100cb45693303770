"""The key of a name in the directory index: pure arithmetic, no I/O.

An ID ``photos/2024/a.jpg`` is the entry ``a.jpg`` of the directory
``photos/2024/``, which is the subdirectory marker ``2024/`` of ``photos/``,
which is the marker ``photos/`` of the root ``""``. Listing a directory reads
its own partitions only; listing a prefix recursively walks markers in name
order, which is the IDs' order (``"x/"`` sorts before ``"x0"`` as ``"/"``
before ``"0"``), so a walk yields IDs sorted as a full scan would.

A directory's entries of generation *g* go to one of its 2^g buckets, numbered
``2^g - 1 .. 2^(g+1) - 2`` so the numbers of all generations are distinct: a
name's bucket is fixed by a hash of the name, so rewriting a name lands on its
row again. Why generations and not a fixed split: a directory of 100 entries
is one partition (one read to list, one batch to write), a directory of ten
million is ~2^7 partitions of at most ``directory_rows`` entries each
(``docs/schema.md`` has the arithmetic).

Example::

    >>> split_id("a.txt"), split_id("photos/2024/a.jpg")
    (('', 'a.txt'), ('photos/2024/', 'a.jpg'))
    >>> markers("photos/2024/")
    [('', 'photos/'), ('photos/', '2024/')]
    >>> buckets(0), buckets(2)
    ([0], [0, 1, 2, 3, 4, 5, 6])
    >>> bucket_of("a.jpg", 0)
    0

Failures: none (every string has a place).
"""

from __future__ import annotations

import hashlib

MAX_GENERATION = 20  # 2^21 - 1 buckets: a directory of 2 * 10^11 entries at the default directory_rows


def directory_key(directory: str) -> str:
    """A directory's key in the tables: ``/`` then the directory (Cassandra refuses an empty key, the root's).
    Example: ``directory_key("")`` -> ``'/'``, ``directory_key("a/")`` -> ``'/a/'``."""
    return "/" + directory


def split_id(file_id: str) -> tuple[str, str]:
    """``(directory, name)`` of an ID: split after its last ``/``."""
    cut = file_id.rfind("/") + 1
    return file_id[:cut], file_id[cut:]


def markers(directory: str) -> list[tuple[str, str]]:
    """The ``(parent, marker name)`` rows that lead from the root to ``directory``, root first."""
    found = []
    start = 0
    while True:
        cut = directory.find("/", start) + 1
        if cut == 0:
            return found
        parent = directory[:start]
        found.append((parent, directory[start:cut]))
        start = cut


def bucket_of(name: str, generation: int) -> int:
    """The bucket of ``name`` in a directory of ``generation``: by a hash of the name, so it never moves."""
    width = 1 << generation
    if width == 1:
        return 0
    spread = int.from_bytes(hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")
    return width - 1 + spread % width


def buckets(generation: int) -> list[int]:
    """Every bucket a directory of ``generation`` may have entries in (those of each generation so far)."""
    return list(range((1 << (generation + 1)) - 1))


def bucket_generation(bucket: int) -> int:
    """The generation a bucket number belongs to. Example: ``bucket_generation(0), bucket_generation(5)`` -> (0, 2)."""
    return (bucket + 1).bit_length() - 1
