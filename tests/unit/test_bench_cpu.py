"""bench.cpu's meter on this very process, with a thread named as HotSpot names its JIT compiler threads."""

from __future__ import annotations

import ctypes
import os
import threading
import time

from bench.cpu import CpuMeter

_PR_SET_NAME = 15


def _spin_as_compiler(stop: threading.Event) -> None:
    ctypes.CDLL(None).prctl(_PR_SET_NAME, b"C2 CompilerThre", 0, 0, 0)  # the kernel keeps 15 bytes of a name
    while not stop.is_set():
        pass


def test_the_compiler_share_lies_between_none_and_all_of_the_node_cpu() -> None:
    # What it injects: the "node" is this process, and a thread named as a C2 compiler thread spins through every
    # window, so nearly all the node's CPU in a window is the compiler's (the case a CI run measured above 1).
    # It checks that the compiler's part is counted and is never more than the node's whole, in short windows.
    stop = threading.Event()
    spinner = threading.Thread(target=_spin_as_compiler, args=(stop,))
    spinner.start()
    try:
        meter = CpuMeter(node_pids=[os.getpid()])
        for _ in range(8):
            with meter.measure() as cost:
                time.sleep(0.1)
            assert cost.node_s is not None and cost.compiler_s is not None
            assert 0 < cost.compiler_s <= cost.node_s
    finally:
        stop.set()
        spinner.join()
