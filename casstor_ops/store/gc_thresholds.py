"""The cyclic garbage collector's thresholds for a process that stores, restores or serves files.

Python runs its cyclic collector after every 700 net allocations of
container objects (a tuple, a list, a dict, an object), and its older
generations after 10 of the younger one's runs. A store allocates a few
dozen such objects a file and a request (rows, values, callbacks, the
group commit's batches), and some of them stay until the collector finds
them (a batch's parts refer to each other), so the collector ran 150-250
times in each of a tree store's two processes (the bench's small tree:
5,626 files) and 70-90 times a second in ``casstor serve`` under 64 KiB
PUTs, each run walking every young object and every tenth run the older
ones too.

:func:`apply_gc_thresholds` makes the first threshold 10,000: the same
objects are collected, a few megabytes later. What it saved is in
``docs/benchmarks.md`` (eighteenth session): in ``casstor serve`` under 20
connections of 64 KiB PUTs, the collector's time fell from 0.41-0.53 s to
0.07-0.08 s a 20 s run.

Example::

    >>> apply_gc_thresholds()
    >>> import gc; gc.get_threshold()[0]
    10000

Failures: none.
"""

from __future__ import annotations

import gc

FIRST_THRESHOLD = 10_000  # allocations between the young generation's runs (Python's default: 700)


def apply_gc_thresholds() -> None:
    """Set this process's collector thresholds (the older generations' stay Python's)."""
    _, second, third = gc.get_threshold()
    gc.set_threshold(FIRST_THRESHOLD, second, third)
