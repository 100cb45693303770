"""``--workers N``: N forked worker processes serving the same listening sockets, and their supervisor.

Each worker is a whole server (its own driver session, Store, shared writer
lease and uvicorn loop); the kernel hands each new connection to one of the
processes blocked in ``accept()`` on the shared socket. The sockets (and the
metrics' shared memory) are made before the fork and the store is opened
only after it: the driver's threads and connections do not survive a fork.

The supervisor (the process that forked) waits until every worker says it is
ready (one byte each on a pipe), calls ``on_ready`` (the ``listening on``
line), then waits. SIGTERM or Ctrl-C is passed on to every worker, which stops
as a single server does (running requests finish, up to the grace time, the
lease is given up); the supervisor returns once all have exited: 0 if they
all exited 0. Its handler is in place before the first fork, so a SIGTERM
during the forks stops the workers forked so far too, never orphans them.
A worker that exits while the server is not stopping is a failure (a bug or
a lost store): the others are stopped and the supervisor returns that
worker's exit status (1 if it exited 0), so a service manager restarts the
whole server.

Example::

    >>> run_workers(2, lambda index, ready: serve_one(index, ready), lambda: print("listening"))  # doctest: +SKIP
    listening

Failures: a worker that fails before it is ready (e.g. Cassandra unreachable)
prints its own ``casstor:`` line (a ``SystemExit`` its message, no
traceback); the others are stopped and its exit status is returned.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from functools import partial

from casstor_ops.errors import run_reporting_errors

log = logging.getLogger("casstor.serve")

Work = Callable[[int, Callable[[], None]], None]
"""One worker's whole life: ``work(index, ready)``, calling ``ready()`` once it can serve."""

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}

WAIT_POLL_S = 0.1
"""How often the supervisor looks for exited workers (see ``_wait_any``)."""


def _fork(index: int, work: Work, pipe_w: int, pipe_r: int, supervisor: _Signals) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:  # the child: never return into the supervisor's code
        code = run_reporting_errors(partial(_child, index, work, pipe_w, pipe_r, supervisor))
    except SystemExit as exit_:  # as the interpreter would exit, without a traceback
        code = _system_exit_code(exit_)
    except BaseException:  # a bug: its traceback, as a single server would show it
        traceback.print_exc()
    finally:
        os._exit(code)


def _child(index: int, work: Work, pipe_w: int, pipe_r: int, supervisor: _Signals) -> None:
    supervisor.restore()  # a worker stops as a single server does, not as the supervisor
    os.close(pipe_r)
    work(index, partial(_say_ready, pipe_w))


def _system_exit_code(exit_: SystemExit) -> int:
    if exit_.code is None or isinstance(exit_.code, int):
        return exit_.code or 0
    print(exit_.code, file=sys.stderr)
    return 1


def _say_ready(pipe_w: int) -> None:
    # Closed at once: the pipe reaches its end when every worker is ready or gone.
    os.write(pipe_w, b"r")
    os.close(pipe_w)


def _stop(pids: dict[int, int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def _exit_code(status: int) -> int:
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _wait_any() -> tuple[int, int]:
    """``os.wait()`` that lets the signal handlers run: a SIGTERM taken by another thread (the driver's, numpy's)
    sets no EINTR on the main thread's blocking wait, so the handler would not run until a worker exits."""
    while True:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            return pid, status
        time.sleep(WAIT_POLL_S)


def _wait_ready(count: int, read_fd: int) -> bool:
    """Whether all ``count`` workers said they are ready (False: one exited without saying it)."""
    seen = 0
    while data := os.read(read_fd, count):
        seen += len(data)
    return seen == count


class _Signals:
    """The supervisor's SIGTERM and Ctrl-C handler, in place before the first fork, and what it replaced.

    The stop signals are blocked in the forking thread while it forks: a
    child starts with them pending, not handled by the supervisor's handler
    it inherits, until :meth:`restore` has put back the handlers and the
    mask it had before the supervisor's."""

    def __init__(self, handler: Callable[[int, object], None]) -> None:
        self._previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
        self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def forked(self) -> None:
        """Every worker is forked: let the stop signals in."""
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)


def run_workers(count: int, work: Work, on_ready: Callable[[], None]) -> int:
    """Fork ``count`` workers running ``work``; supervise them until they all exit (see the module docstring)."""
    pids: dict[int, int] = {}
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        _stop(pids)

    pipe_r, pipe_w = os.pipe()
    supervisor = _Signals(stop)
    try:
        for index in range(count):
            if stopping:
                break  # a SIGTERM during the forks: fork no more
            pids[_fork(index, work, pipe_w, pipe_r, supervisor)] = index
        supervisor.forked()
        os.close(pipe_w)
        with os.fdopen(pipe_r, "rb", buffering=0) as pipe:
            all_ready = not stopping and _wait_ready(count, pipe.fileno())
        if all_ready:
            on_ready()
        else:
            stopping = True
            _stop(pids)
        code = 0
        while pids:
            pid, status = _wait_any()
            index, worker_code = pids.pop(pid), _exit_code(status)
            if not stopping:
                log.error("worker %d exited with status %d: stopping the server", index, worker_code)
                stopping = True
                _stop(pids)
                worker_code = worker_code or 1  # unasked, even a clean exit is a failure: the server must restart
            code = code or worker_code
        return code
    finally:
        supervisor.restore()
