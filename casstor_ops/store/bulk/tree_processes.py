"""A tree store shared by client processes: each takes the tree's next item when it has room for one.

A store of many small files is bound by the client's Python, not by the
node: on the bench's tree of 5,626 files the client held the GIL 3.3 s of a
4.5 s store while the node used about half a core, and more worker threads
changed nothing. Two ``casstor store`` commands on two halves of the tree took
0.80x the time of one on the whole (3 alternated pairs), and this module's two
processes 0.82x (6 pairs; three processes were no faster than two). So
:func:`in_processes` runs ``run`` here and in ``processes - 1`` processes of
their own (``spawn``: no driver thread is forked), each with its own session
and its own writer lease, as ``casstor store`` would; their report rows are
merged.

The other processes start only once this one has work to share (its
runner calls ``on_work``: the first file not listed unchanged) while items
are left: an unchanged re-run is this process's alone, and does not pay a
second process's connection and lease. They are spawned by a thread of their
own (:class:`_Starter`) that outlives them: ``PR_SET_PDEATHSIG`` (below)
follows the thread that spawned a child, and a worker thread that did would
take its child with it when it ended.

A command can have them ready sooner: a :class:`Standby` made before it
connects forks them while it is still one thread (a fork of a process whose
driver threads run could inherit a lock one of them held, forever taken),
and each waits on a pipe for its part. Such a child has every module the
command imported, so it connects and stores at once; a spawned one first
imports them again, beside a parent storing on both cores: on the bench's
tree of 5,626 files it began ~0.45 s later than a forked one, and the store
took 11 % longer (8 alternated pairs: medians 2.40 against 2.16 s, each pair
faster forked; docs/benchmarks.md, twenty-fourth session). A child left
unused ends when the standby is closed.

The items are not cut into parts up front: every process takes the next one
from one shared turn (:class:`_Turns`) as its runner queues one, so a process
slowed by large files, a late start or a busy core takes fewer. Cut up front
into halves of as many small files, this process's half (which also held every
large file, 41 MB of the bench's 141) ended 0.7-1.1 s after the child's (4
runs of 3.3-4.1 s); taken in turn, the two end within 0.03-0.2 s of each other.
The wall time of that tree stayed level (16 alternated pairs, medians 3.65 and
3.63 s: a process left alone has both cores); with the 216 MB of four release
tars added, 4 pairs of 4 were faster (medians 5.38 and 5.12 s).

Every process keeps the per-batch commit order of
:mod:`casstor_ops.store.engine.batch_upload`, so a process killed at any point
leaves each of its files old or new, as a killed ``casstor store`` does. A
child dies with its parent (Linux ``PR_SET_PDEATHSIG``): a parent killed
leaves no process storing on.

Example::

    >>> with Standby(1) as standby, Store.open() as store:                                  # doctest: +SKIP
    ...     report = in_processes(store, items, 2, partial(store_items, workers=2), None, standby)
    >>> report.exit_code                                                                       # doctest: +SKIP
    0

Failure behaviour: a child that fails as the command would (a lapsed
lease, the cluster unreachable: a :class:`~casstor_ops.errors.CasstorError`)
makes the command fail with its message and exit code once every process has
ended (the others take the items it leaves); a child that dies without a word
(killed, out of memory) fails the command with its exit status. A failure of
this process's own run kills the children (safe, as above) and propagates. A
file that fails fails its row only, whichever process stored it.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from casstor_ops.cluster.connection import endpoint_of
from casstor_ops.cluster.endpoint import Endpoint
from casstor_ops.errors import CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.bulk.tree_files import one_line
from casstor_ops.store.gc_thresholds import apply_gc_thresholds
from casstor_ops.store.malloc_thresholds import apply_malloc_thresholds
from casstor_ops.store.progress import ProgressCallback
from casstor_ops.store.schema import StoreSettings

_PR_SET_PDEATHSIG = 1


class PartReport(Protocol):
    """What a process's run returns (the tree runner's report; a protocol keeps this module below that runner)."""

    rows: list[dict[str, Any]]
    seconds: float


Item = TypeVar("Item")
Report = TypeVar("Report", bound=PartReport)
OnWork = Callable[[], None]
Run = Callable[[Store, Iterable[Item], ProgressCallback | None, OnWork | None], Report]


def in_processes(store: Store, items: Sequence[Item], processes: int, run: Run[Item, Report],
                 progress: ProgressCallback | None, standby: Standby | None = None) -> Report:
    """``run(store, taken, progress, on_work)`` in this process and, once it calls ``on_work`` while items are
    left, in ``processes - 1`` child processes (a picklable ``run``: a module-level function or a ``partial`` of
    one; theirs get None for ``on_work``), where ``taken`` yields the next of ``items`` that no process took yet
    (each item goes to one process); this process's report with every process's rows, and the wall time of them
    all. The children are ``standby``'s when it has them, else spawned."""
    started = time.monotonic()
    forked = standby is not None and standby.ready
    turns = standby.turns if forked else _Turns(multiprocessing.get_context("spawn"))

    def start() -> list[_Child]:
        if not turns.left(items):  # this process took them all (a child would start for nothing)
            return []
        task = _Task(endpoint_of(store.session), store.settings, run, items, progress is not None)
        if forked:
            return standby.take(processes - 1, task, progress)
        return [_Child.spawned(task, turns, progress) for _ in range(processes - 1)]

    starter = _Starter(start)
    try:
        report = run(store, turns.taken(items), progress, starter.ask)
        for child in starter.finish():
            report.rows.extend(child.rows())
    finally:
        for child in starter.finish():
            child.stop()
        starter.close()
    report.seconds = time.monotonic() - started
    return report


class _Starter:
    """Starts the child processes on a thread of its own once asked (:meth:`ask`, from any thread), unless this
    process's run has ended first (:meth:`finish`); the thread lives until :meth:`close`, after the children."""

    def __init__(self, start: Callable[[], list["_Child"]]) -> None:
        self._start = start
        self._children: list[_Child] = []
        self._finished = False
        self._lock = threading.Lock()
        self._asked, self._closed = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._main, name="casstor-part-starter", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        self._asked.wait()
        with self._lock, contextlib.suppress(OSError):  # no process to spawn (out of memory): this one stores alone
            if not self._finished:
                self._children = self._start()
        self._closed.wait()  # the children's parent thread: it must not end before they do

    def ask(self) -> None:
        """There is work to share: start the children (once; later calls do nothing)."""
        self._asked.set()

    def finish(self) -> list["_Child"]:
        """No child starts after this: the children started, if any."""
        with self._lock:  # a start under way ends first
            self._finished = True
            children = self._children
        self._asked.set()
        return children

    def close(self) -> None:
        """Let the thread end (the children have ended or were stopped)."""
        self._closed.set()
        self._thread.join()


class _Turns:
    """The index of the next item to take, shared by the processes of one store (inherited by each child)."""

    def __init__(self, context: multiprocessing.context.BaseContext) -> None:
        self._next = context.Value("q", 0)

    def taken(self, items: Sequence[Item]) -> Iterator[Item]:
        """The items this process takes, one at a time, as it asks: a runner asks when it has room for one."""
        while True:
            with self._next.get_lock():
                index = self._next.value
                self._next.value = index + 1
            if index >= len(items):
                return
            yield items[index]

    def left(self, items: Sequence[Item]) -> bool:
        """Whether some of ``items`` are not taken yet."""
        return self._next.value < len(items)


@dataclass(frozen=True)
class _Task:
    """What a child needs to store its part: where and how to connect, its runner and the items to take from."""

    endpoint: Endpoint
    settings: StoreSettings
    run: Run[Any, Any]
    items: Sequence[Any]
    progress: bool  # send progress messages


@dataclass(frozen=True)
class _Progress:
    """A child's message: it read ``size`` more bytes of the tree (the command's progress counts bytes)."""

    size: int


@dataclass(frozen=True)
class _Finished:
    """A child's last message when it took every item it could: its report's rows."""

    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class _Failed:
    """A child's last message when it failed: the one line to report and the exit code of its error, if a user's."""

    message: str
    exit_code: int | None


class Standby:
    """Child processes forked now, before this one connects, each waiting for its part of a tree store
    (:func:`in_processes` gives it; the module docstring says why). None are forked while this process runs
    other threads (``ready`` is then False: :func:`in_processes` spawns its children instead); those left unused
    end when the standby is closed.

    Example: ``with Standby(1) as standby, Store.open() as store: store_tree(store, "src", standby=standby)``.
    Failures: a fork that fails (out of memory) leaves the standby with fewer processes, or none.
    """

    def __init__(self, count: int) -> None:
        context = multiprocessing.get_context("fork")
        self.turns = _Turns(context)
        self._waiting: list[_Waiting] = []
        if threading.active_count() == 1:
            for stream in (sys.stdout, sys.stderr):  # else a child's exit would write what they hold a second time
                stream.flush()
            with contextlib.suppress(OSError):
                for _ in range(count):
                    self._waiting.append(_Waiting(context, self.turns, self._waiting))

    @property
    def ready(self) -> bool:
        """Some child is forked and waiting."""
        return bool(self._waiting)

    def take(self, count: int, task: _Task, progress: ProgressCallback | None) -> list["_Child"]:
        """Give ``task`` to up to ``count`` of the waiting children (the others stay unused until :meth:`close`)."""
        taken, self._waiting = self._waiting[:count], self._waiting[count:]
        return [waiting.start(task, progress) for waiting in taken]

    def close(self) -> None:
        """End the children given no task."""
        waiting, self._waiting = self._waiting, []
        for child in waiting:
            child.release()

    def __enter__(self) -> "Standby":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _Waiting:
    """A forked child waiting for its task on a pipe; its outcome comes back on another."""

    def __init__(self, context: multiprocessing.context.BaseContext, turns: _Turns, older: list["_Waiting"]
                 ) -> None:
        tasks, self._tasks = context.Pipe(duplex=False)
        self._receive, send = context.Pipe(duplex=False)
        # The fork copies every descriptor: the child closes this process's ends (its own and ``older`` children's),
        # or a pipe this process closes would never read EOF there.
        ends = [self._tasks, self._receive, *(end for child in older for end in (child._tasks, child._receive))]
        self._process = context.Process(target=_waiting_main, args=(tasks, send, turns, os.getpid(), ends),
                                        name="casstor-store-part", daemon=True)
        self._process.start()
        tasks.close()
        send.close()

    def start(self, task: _Task, progress: ProgressCallback | None) -> "_Child":
        with self._tasks:
            self._tasks.send(task)
        return _Child(self._process, self._receive, progress)

    def release(self) -> None:
        self._tasks.close()  # the child reads EOF and ends
        self._receive.close()
        self._process.join()


class _Child:
    """A process of its own taking items; its messages (progress, then its rows or its error) read by a thread,
    so it never blocks on a full pipe."""

    def __init__(self, process: multiprocessing.process.BaseProcess, receive, progress: ProgressCallback | None
                 ) -> None:
        self._process = process
        self._progress = progress
        self._outcome: _Finished | _Failed | None = None
        self._reader = threading.Thread(target=self._read, args=(receive,), name="casstor-part-reader", daemon=True)
        self._reader.start()

    @classmethod
    def spawned(cls, task: _Task, turns: _Turns, progress: ProgressCallback | None) -> "_Child":
        """A child spawned now for ``task`` (it imports this module's world again before it connects)."""
        context = multiprocessing.get_context("spawn")
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_child_main, args=(task, turns, send, os.getpid()),
                                  name="casstor-store-part", daemon=True)
        process.start()
        send.close()  # this end is the child's: the reader sees EOF when the child is gone
        return cls(process, receive, progress)

    def _read(self, receive) -> None:
        with receive:
            while True:
                try:
                    message = receive.recv()
                except (EOFError, OSError):
                    return
                if isinstance(message, _Progress):
                    if self._progress is not None:
                        self._progress(message.size)
                else:
                    self._outcome = message

    def rows(self) -> list[dict[str, Any]]:
        """The child's report rows once it has ended; raises its error, or one for a child that died."""
        self._reader.join()
        self._process.join()
        outcome = self._outcome
        if isinstance(outcome, _Finished):
            return outcome.rows
        if isinstance(outcome, _Failed):
            raise CasstorError(outcome.message, outcome.exit_code)
        raise CasstorError(f"store: a process storing part of the tree ended with status {self._process.exitcode} "
                           f"and no report; what was committed is kept; run it again")

    def stop(self) -> None:
        """Kill the child if it still runs (this process failed): its files are each old or new."""
        if self._process.is_alive():
            self._process.kill()
        self._process.join()


def _waiting_main(tasks, send, turns: _Turns, parent: int, parents_ends: list) -> None:
    """A forked child: its task, or nothing (EOF: the standby was closed unused)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent answers Ctrl-C, and kills its children
    _die_with(parent)
    for end in parents_ends:
        end.close()
    try:
        task = tasks.recv()
    except (EOFError, OSError):
        return
    _store_part(task, turns, send)


def _child_main(task: _Task, turns: _Turns, send, parent: int) -> None:
    """A spawned child."""
    _die_with(parent)
    apply_gc_thresholds()  # what the command's main set is not inherited
    apply_malloc_thresholds()
    _store_part(task, turns, send)


def _store_part(task: _Task, turns: _Turns, send) -> None:
    """Take items until none is left; send the rows, or the error."""
    try:
        with Store.open(task.endpoint, settings=task.settings) as store:
            report = task.run(store, turns.taken(task.items),
                              (lambda n: send.send(_Progress(n))) if task.progress else None, None)
        outcome: _Finished | _Failed = _Finished(report.rows)
    except CasstorError as err:
        outcome = _Failed(str(err), err.exit_code)
    except Exception as err:  # not a user's error: the parent reports it as one line, as the command would
        outcome = _Failed(f"store: a process storing part of the tree failed: {one_line(err)}", None)
    with contextlib.suppress(OSError):  # a parent gone (where it cannot take its child with it) reads nothing
        send.send(outcome)
    send.close()


def _die_with(parent: int) -> None:
    """Be killed when the parent dies (Linux; elsewhere a child outlives a killed parent until the items run out)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)
