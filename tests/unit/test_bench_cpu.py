"""bench.cpu's meter on this very process, with a thread named as HotSpot names its JIT compiler threads; the
settling rounds that run until the node's compiler is quiet."""

from __future__ import annotations

import ctypes
import os
import threading
import time

from bench.cpu import SETTLED_SHARE, CpuMeter, settle

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


def test_settling_stops_at_the_first_round_under_the_settled_share_or_at_the_most_allowed() -> None:
    shares = iter([0.5, 0.3, SETTLED_SHARE, SETTLED_SHARE / 2, 0.0])
    lines: list[str] = []
    assert settle(lambda: next(shares), 8, lines.append) == [0.5, 0.3, SETTLED_SHARE, SETTLED_SHARE / 2]
    assert next(shares) == 0.0  # no round after the settled one
    assert "    the node's compiler took 50 % of its CPU" in lines
    assert settle(lambda: 0.9, 3, lines.append) == [0.9, 0.9, 0.9]
    ran: list[int] = []
    assert settle(lambda: ran.append(1) or 0.9, 0, lines.append) == [] and not ran
