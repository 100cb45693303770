"""The C allocator's thresholds a casstor command fixes for itself (``store/malloc_thresholds.py``).

Each check runs in a process of its own, as a command does, and injects the allocations that made a store fault:
buffers of growing sizes (256 KiB to 7 MiB), each freed before the next, so each is above the threshold glibc set
itself after the one before. It counts the process's minor page faults over them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from casstor_ops.cluster.paths import project_root

CHILD = """
import resource, sys
from casstor_ops.store.malloc_thresholds import apply_malloc_thresholds
if sys.argv[1] == "apply":
    assert apply_malloc_thresholds()
elif sys.argv[1] == "main":
    from casstor_ops.cli.main import main
    try:
        main(["no-such-command"])
    except SystemExit:
        pass
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for size in range(256 << 10, 7 << 20, 256 << 10):
    buffer = bytearray(size)
    del buffer
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(how: str) -> int:
    done = subprocess.run([sys.executable, "-c", CHILD, how], capture_output=True, text=True, timeout=60,
                          cwd=project_root(), check=True)
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and /proc's fault counts")
def test_buffers_of_growing_sizes_reuse_the_heap_once_the_threshold_is_fixed() -> None:
    # Left to itself glibc maps and faults in every one of them (~24,000 faults of 4 KiB: 95 MiB); fixed, they
    # come from the heap, which grows to the largest once (~1,800).
    unset, fixed = _faults("none"), _faults("apply")
    assert fixed * 4 < unset, (fixed, unset)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and /proc's fault counts")
def test_every_command_fixes_it_before_anything_else() -> None:
    """Even a command line refused as usage (exit 2) has fixed it: it comes before the arguments are read."""
    assert _faults("main") * 4 < _faults("none")
