"""A tree store's entries by directory (``store/namespace/entries.py`` ``BatchedEntries``), on a fake namespace that
records each directory's write (and may fail one)."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timezone

import pytest

from casstor_ops.store.namespace.entries import BatchedEntries
from casstor_ops.store.records import FileInfo


class FakeNamespace:
    def __init__(self, failing: str | None = None) -> None:
        self.written: list[tuple[str, list[str]]] = []
        self.threads: set[str] = set()
        self.calls: list[list[str]] = []
        self._failing = failing
        self._lock = threading.Lock()

    def publish_many(self, infos) -> None:
        """Record each directory's entries as written, but the failing one's: that one fails the call."""
        with self._lock:
            for directory, files in infos.items():
                if directory != self._failing:
                    self.written.append((directory, [info.id for info, _ in files]))
            self.calls.append(list(infos))
            self.threads.add(threading.current_thread().name)
        if self._failing in infos:
            raise OSError("injected: the entries' write failed")


def info(file_id: str) -> FileInfo:
    return FileInfo(file_id, uuid.uuid1(), 1, b"h" * 32, 1, datetime.now(timezone.utc), None)


def test_the_older_half_goes_together_when_too_many_wait_and_the_rest_at_the_flush() -> None:
    namespace = FakeNamespace()
    entries = BatchedEntries(namespace, files=64, open_directories=4)
    for name in ("a/1", "a/2", "b/1", "c/1", "c/2", "d/1", "e/1", "e/2", "f/1"):
        entries.publish(info(name))
    entries.flush()
    assert sorted(namespace.written) == [("a/", ["a/1", "a/2"]), ("b/", ["b/1"]), ("c/", ["c/1", "c/2"]),
                                         ("d/", ["d/1"]), ("e/", ["e/1", "e/2"]), ("f/", ["f/1"])]
    assert namespace.calls == [["a/", "b/", "c/"], ["d/", "e/", "f/"]]
    assert all(name.startswith("casstor-entries") for name in namespace.threads)


def test_a_full_directory_goes_at_once_and_a_lone_one_is_written_on_the_callers_thread() -> None:
    namespace = FakeNamespace()
    entries = BatchedEntries(namespace, files=2)
    for name in ("a/1", "a/2", "a/3"):
        entries.publish(info(name))
    entries.flush()
    assert sorted(namespace.written) == [("a/", ["a/1", "a/2"]), ("a/", ["a/3"])]
    alone = FakeNamespace()
    one = BatchedEntries(alone)
    one.publish(info("x/1"))
    one.flush()
    assert alone.written == [("x/", ["x/1"])] and alone.threads == {threading.current_thread().name}


def test_a_failed_write_is_raised_by_the_flush_after_the_others_are_written() -> None:
    """Injects a failing write of one directory's entries, handed to a writer early; checks the flush raises it and
    every other directory's entries were written."""
    namespace = FakeNamespace(failing="b/")
    entries = BatchedEntries(namespace, open_directories=1)
    for name in ("a/1", "b/1", "c/1", "d/1"):
        entries.publish(info(name))
    with pytest.raises(OSError, match="injected"):
        entries.flush()
    assert sorted(d for d, _ in namespace.written) == ["a/", "c/", "d/"]
