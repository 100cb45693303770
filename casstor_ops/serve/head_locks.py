"""Per-key locks that order a server process's head writes of one key: a conditional PUT's check, then its write.

A PUT's ``If-Match`` is checked once more just before its head write
(``Store.put(before_commit=…)``), but the head write itself is a plain
upsert (no lightweight transaction on the store's write path), so another
writer's head can land between that check and the write. Within one server
process every PUT of a key takes the key's lock in its ``before_commit``
and keeps it until its put returns: the check and the head write of two
PUTs of the same key never interleave, so of two conditional PUTs naming
the same ETag exactly one succeeds. A DELETE holds the lock around its
removal (:meth:`HeadLocks.holding`), so it never lands between a PUT's
check and its head write (which would bring the file back). Writers elsewhere (another worker
process, another server, the CLI) are not ordered by it: against them, the
time between one head read and one head write is open (``docs/serve.md``). A lock
lives only while some request of its key waits for it or holds it.

Example::

    >>> locks = HeadLocks()
    >>> with locks.lock_for("a") as lock:    # doctest: +SKIP
    ...     store.put(reader, "a", before_commit=lock.then(check))
    >>> with locks.holding("a"):         # doctest: +SKIP
    ...     store.remove("a")

Failures: none of its own; an error raised by the check propagates (the
lock is released when the ``lock_for`` block exits, whatever happened).
A cross-gateway *turn* is another thing: :mod:`casstor_ops.serve.s3.conditions`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class _Entry:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


class KeyLock:
    """One PUT's place at a key's lock: taken by :meth:`then`'s hook (or :meth:`take_now`), released when the
    ``lock_for`` block ends."""

    def __init__(self, entry: _Entry) -> None:
        self._entry = entry
        self.held = False

    def take_now(self) -> bool:
        """Take the key's lock if it is free (True), never waiting (for a write on the event loop)."""
        self.held = self._entry.lock.acquire(blocking=False)
        return self.held

    def then(self, check: Callable[[], None]) -> Callable[[], None]:
        """A ``before_commit`` hook: take the key's lock, then run ``check``."""
        def hook() -> None:
            self._entry.lock.acquire()
            self.held = True
            check()
        return hook


class HeadLocks:
    """The per-key locks of one server process; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    @contextlib.contextmanager
    def lock_for(self, key: str) -> Iterator[KeyLock]:
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            entry.users += 1
        lock = KeyLock(entry)
        try:
            yield lock
        finally:
            if lock.held:
                entry.lock.release()
            with self._lock:
                entry.users -= 1
                if entry.users == 0:
                    del self._entries[key]

    @contextlib.contextmanager
    def holding(self, key: str) -> Iterator[None]:
        """Hold ``key``'s lock for the whole block (a DELETE's removal)."""
        with self.lock_for(key) as lock:
            lock.then(lambda: None)()
            yield

    def __len__(self) -> int:
        """Keys with a lock now (for tests: none once no PUT is running)."""
        return len(self._entries)
