"""Storing or restoring a list of files in N processes, timed from a common start.

One Python process chunks, hashes and drives the driver on (at most) one
core; this spreads whole files over ``procs`` worker processes (spawned:
the driver's threads do not survive ``fork``). Each worker connects
(:func:`casstor_ops.spark.executor_store.store_for`) and reports ready *before*
the clock starts, so connection set-up is not timed; the figure is the wall
time from the common start to the last file done.

Example::

    >>> seconds, results = run_parallel(endpoint, "put", [(path, "bench/a")], procs=2)   # doctest: +SKIP

Failures: the first worker error is raised here as
:class:`~casstor_ops.errors.CasstorError` naming the file; every worker is
joined (or terminated after a timeout) first.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from pathlib import Path

from casstor_ops.cluster.connection import Endpoint
from casstor_ops.errors import CasstorError
from casstor_ops.spark.executor_store import store_for

READY_TIMEOUT_S = 120.0
RESULT_TIMEOUT_S = 1800.0


def _worker(endpoint: Endpoint, op: str, jobs: list[tuple[str, str]], ready: mp.Queue, start: mp.Event,
            results: mp.Queue) -> None:
    file_id = "(connecting)"
    try:
        store = store_for(endpoint)  # closed by executor_store at exit
        ready.put(None)
        start.wait()
        for path, file_id in jobs:
            result = store.put(path, file_id) if op == "put" else store.restore(file_id, path)
            results.put(("ok", result))
    except Exception as err:  # reported to the parent, which raises it with context
        ready.put(None)
        results.put(("error", f"{file_id}: {type(err).__name__}: {err}"))


def run_parallel(endpoint: Endpoint, op: str, jobs: list[tuple[Path, str]], procs: int) -> tuple[float, list]:
    """``op`` ('put' or 'restore') every ``(path, file_id)`` over ``procs`` processes.

    Returns (seconds from the common start to the last result, the
    ``StoreResult``/``RestoreResult`` list in completion order).
    """
    if op not in ("put", "restore"):
        raise ValueError(f"op {op!r}: expected 'put' or 'restore'")
    ctx = mp.get_context("spawn")
    ready, results, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = [[(str(p), i) for p, i in jobs[k::procs]] for k in range(procs)]
    workers = [ctx.Process(target=_worker, args=(endpoint, op, share, ready, start, results), daemon=True)
               for share in shares if share]
    for w in workers:
        w.start()
    try:
        for _ in workers:
            ready.get(timeout=READY_TIMEOUT_S)
        began = time.perf_counter()
        start.set()
        collected = []
        for _ in jobs:
            status, value = results.get(timeout=RESULT_TIMEOUT_S)
            if status == "error":
                raise CasstorError(f"a bench worker failed: {value}")
            collected.append(value)
        seconds = time.perf_counter() - began
    except queue.Empty:
        raise CasstorError(f"bench workers did not finish within {RESULT_TIMEOUT_S:.0f} s") from None
    finally:
        start.set()
        for w in workers:
            w.join(timeout=60)
            if w.is_alive():
                w.terminate()
                w.join()
    return seconds, collected
