"""Runs: a sequence cut, in order, into consecutive groups bounded by a count and a number of bytes.

Every batch of the small-file paths is such a run: a tree store's files
(:mod:`casstor_ops.store.bulk.tree`), a tree restore's files and its block
reads (:mod:`casstor_ops.store.bulk.batch_restore`), a batch's rows to one
unlogged batch statement (:func:`casstor_ops.store.cql.request_queue.row_batches`).

Example::

    >>> list(runs([5, 5, 5], size=int, max_items=10, max_bytes=10))
    [[5, 5], [5]]
    >>> list(runs([30, 1], size=int, max_items=10, max_bytes=10))   # larger than max_bytes: a run of its own
    [[30], [1]]

Nothing fails here: a bound is a limit on what a run collects, and an item
over ``max_bytes`` alone is still a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Item = TypeVar("Item")


def runs(items: Iterable[Item], size: Callable[[Item], int], max_items: int, max_bytes: int) -> Iterator[list[Item]]:
    """``items`` in order, in runs of at most ``max_items`` items and ``max_bytes`` of their ``size`` (an item
    larger than ``max_bytes`` alone)."""
    run: list[Item] = []
    held = 0
    for item in items:
        weight = size(item)
        if run and (len(run) >= max_items or held + weight > max_bytes):
            yield run
            run, held = [], 0
        run.append(item)
        held += weight
    if run:
        yield run
