"""A tree store shared by client processes: each part of the tree stored by a process of its own.

A store of many small files is bound by the client's Python, not by the
node: on the bench's tree of 5,626 files the client held the GIL 3.3 s of a
4.5 s store while the node used about half a core, and more worker threads
changed nothing. Two ``casstor store`` commands on two halves of the tree took
0.80x the time of one on the whole (3 alternated pairs), and this module's two
processes 0.82x (6 pairs; three processes were no faster than two). So
:func:`in_processes` runs ``run(store, parts[0])`` here and each other part
in a process of its own (``spawn``: no driver thread is forked), each with
its own session and its own writer lease, as ``casstor store`` run on that
part would; their report rows are merged in part order.

Every part keeps the per-batch commit order of
:mod:`casstor_ops.store.batch_upload`, so a process killed at any point
leaves each of its files old or new, as a killed ``casstor store`` does. A
child dies with its parent (Linux ``PR_SET_PDEATHSIG``): a parent killed
leaves no process storing on.

Example::

    >>> report = in_processes(store, [part_a, part_b], partial(store_items, workers=4), progress=None)  # doctest: +SKIP
    >>> report.exit_code                                                                            # doctest: +SKIP
    0

Failure behaviour: a child that fails as the command would (a lapsed
lease, the cluster unreachable: a :class:`~casstor_ops.errors.CasstorError`)
makes the command fail with its message and exit code once every part has
ended; a child that dies without a word (killed, out of memory) fails the
command with its exit status. A failure of this process's own part kills
the children (safe, as above) and propagates. A file that fails fails its
row only, whichever process stored it.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from casstor_ops.cluster.connection import endpoint_of
from casstor_ops.cluster.endpoint import Endpoint
from casstor_ops.errors import CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.bulk.tree_files import one_line
from casstor_ops.store.progress import ProgressCallback
from casstor_ops.store.schema import StoreSettings

_PR_SET_PDEATHSIG = 1


class PartReport(Protocol):
    """What a part's run returns (the tree runner's report; a protocol keeps this module below that runner)."""

    rows: list[dict[str, Any]]
    seconds: float


Item = TypeVar("Item")
Report = TypeVar("Report", bound=PartReport)
Run = Callable[[Store, Sequence[Item], ProgressCallback | None], Report]


def in_processes(store: Store, parts: Sequence[Sequence[Item]], run: Run[Item, Report],
                 progress: ProgressCallback | None) -> Report:
    """``run(store, parts[0], progress)`` in this process and ``run`` of each other part in a child process (a
    picklable ``run``: a module-level function or a ``partial`` of one); the first part's report with every
    part's rows, in part order, and the wall time of them all."""
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    children = [_Child(context, endpoint_of(store.session), store.settings, run, part, progress)
                for part in parts[1:]]
    try:
        report = run(store, parts[0], progress)
        for child in children:
            report.rows.extend(child.rows())
    finally:
        for child in children:
            child.stop()
    report.seconds = time.monotonic() - started
    return report


class _Child:
    """One part stored by a process of its own; its messages (progress, then its rows or its error) read by a
    thread here as they come, so a child never waits on a full pipe."""

    def __init__(self, context, endpoint: Endpoint, settings: StoreSettings, run: Run[Any, Any], part: Sequence[Any],
                 progress: ProgressCallback | None) -> None:
        receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_child_main, args=(endpoint, settings, run, list(part), send,
                                                                  progress is not None, os.getpid()),
                                        name="casstor-store-part", daemon=True)
        self._process.start()
        send.close()  # this end is the child's: the reader sees EOF when the child is gone
        self._progress = progress
        self._outcome: tuple[str, Any] | None = None
        self._reader = threading.Thread(target=self._read, args=(receive,), name="casstor-part-reader", daemon=True)
        self._reader.start()

    def _read(self, receive) -> None:
        with receive:
            while True:
                try:
                    kind, value = receive.recv()
                except (EOFError, OSError):
                    return
                if kind == "progress":
                    if self._progress is not None:
                        self._progress(value)
                else:
                    self._outcome = (kind, value)

    def rows(self) -> list[dict[str, Any]]:
        """The part's report rows once the child has ended; raises its error, or one for a child that died."""
        self._reader.join()
        self._process.join()
        kind, value = self._outcome or ("died", None)
        if kind == "rows":
            return value
        if kind == "error":
            raise CasstorError(*value)
        raise CasstorError(f"store: a process storing part of the tree ended with status {self._process.exitcode} "
                           f"and no report; what was committed is kept; run it again")

    def stop(self) -> None:
        """Kill the child if it still runs (this process failed): its files are each old or new."""
        if self._process.is_alive():
            self._process.kill()
        self._process.join()


def _child_main(endpoint: Endpoint, settings: StoreSettings, run: Run[Any, Any], part: list, send, progress: bool,
                parent: int) -> None:
    _die_with(parent)
    try:
        with Store.open(endpoint, settings=settings) as store:
            report = run(store, part, (lambda n: send.send(("progress", n))) if progress else None)
        outcome = ("rows", report.rows)
    except CasstorError as err:
        outcome = ("error", (str(err), err.exit_code))
    except Exception as err:  # not a user's error: the parent reports it as one line, as the command would
        outcome = ("error", (f"store: a process storing part of the tree failed: {one_line(err)}", None))
    with contextlib.suppress(OSError):  # a parent gone (where it cannot take its child with it) reads nothing
        send.send(outcome)
    send.close()


def _die_with(parent: int) -> None:
    """Be killed when the parent dies (Linux; elsewhere a child outlives a killed parent until its part ends)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)
