"""The C allocator's mmap and trim thresholds for a process that stores, restores or serves files.

glibc's ``malloc`` serves a request of at least its *mmap threshold* (128
KiB at first) with a mapping of its own, and unmaps it when it is freed;
each such free raises the threshold to that block's size (up to 32 MiB),
and the heap's free top is given back to the kernel beyond twice it. A
store's blocks (64 KiB to 1 MiB), their compressed payloads, the driver's
frames of them and the 4 MiB segments a file is read in are allocated and
freed by the thousand, each size in its turn above the threshold of the
moment, so their pages were mapped, faulted in, zeroed and unmapped again
and again: a first store of the bench's four release tars (242.5 MB) took
104,000-111,000 minor page faults.

:func:`apply_malloc_thresholds` fixes the threshold at
:data:`MMAP_THRESHOLD` (8 MiB), above every buffer of the pipeline, so they
come from the heap and its free lists, reused, and the trim threshold at
:data:`TRIM_THRESHOLD`: a process keeps up to that much freed memory at its
heap's top for the next file instead of giving it back. The same store then
took 62,000-67,000 faults, about one a page of its peak memory
(``docs/benchmarks.md``, thirty-ninth session, has the time it saves).

Example::

    >>> apply_malloc_thresholds()       # doctest: +SKIP
    True

Failures: none; a C library without glibc's ``mallopt`` (musl, macOS) is
left as it is.
"""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>; setting either stops both moving by themselves
MMAP_THRESHOLD = 8 * 1024 * 1024
TRIM_THRESHOLD = 4 * MMAP_THRESHOLD


def apply_malloc_thresholds() -> bool:
    """Fix this process's mmap threshold at :data:`MMAP_THRESHOLD` and its trim threshold at
    :data:`TRIM_THRESHOLD`; whether the C library took them."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    return bool(mallopt is not None and mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
