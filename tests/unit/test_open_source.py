"""store.api.open_source without Cassandra: only regular files are opened by path, and nothing ever blocks."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Callable

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.api import open_source

TIMEOUT_S = 10


def _bounded(action: Callable[[], object], unblock: Callable[[], None]) -> object:
    """Run ``action`` in a thread; if it has not returned in TIMEOUT_S, ``unblock`` it and fail (never hang)."""
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(_capture(action)), daemon=True)
    worker.start()
    worker.join(TIMEOUT_S)
    if worker.is_alive():
        unblock()
        worker.join(TIMEOUT_S)
        pytest.fail(f"blocked for more than {TIMEOUT_S} s")
    return outcome[0]


def _capture(action: Callable[[], object]) -> object:
    try:
        return action()
    except Exception as err:  # returned to the test thread
        return err


def _read(path: Path) -> bytes:
    with open_source(path) as (reader, _attributes):
        return reader.read()


def _feed_fifo(path: Path) -> None:
    """Open a FIFO for writing and close it: a reader blocked on it sees end of file."""
    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def test_fifo_is_refused_at_once_with_one_line(tmp_path: Path) -> None:
    """Injects a FIFO with no writer (opening it used to block forever); checks one line naming it, within
    the timeout (a regression fails instead of hanging: the test then opens the FIFO's other end)."""
    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    error = _bounded(lambda: _read(fifo), lambda: _feed_fifo(fifo))
    assert isinstance(error, CasstorError), error
    assert str(error) == (f"cannot store {str(fifo)!r}: is a FIFO: only regular files are stored by path "
                          f"(pipe it to - or --stdin)")


def test_devices_sockets_and_directories_are_refused(tmp_path: Path) -> None:
    """Injects a character device (/dev/null: reads as empty, so it used to be stored as an empty file), a
    listening Unix socket and a directory; checks a one-line CasstorError for each."""
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(sock_path))
        for path, message in [(Path("/dev/null"), "is a character device"), (sock_path, "cannot read"),
                              (tmp_path, "is a directory")]:
            with pytest.raises(CasstorError, match=message) as caught:
                _read(path)
            assert "\n" not in str(caught.value)


def test_regular_file_reads_blocking_to_the_end(tmp_path: Path) -> None:
    """Injects a plain file; checks it is read whole and its descriptor is back in blocking mode."""
    path = tmp_path / "plain"
    path.write_bytes(b"x" * 100_000)
    with open_source(path) as (reader, attributes):
        assert os.get_blocking(reader.fileno())
        assert reader.name == str(path) and reader.read() == b"x" * 100_000
        assert attributes.mtime_ns == path.stat().st_mtime_ns


def test_a_symlink_is_refused_unless_following(tmp_path: Path) -> None:
    """Injects a symlink to a readable file; checks that without following it is refused by the open itself
    (O_NOFOLLOW: one line naming the link, so one swapped in after a check is never read), and that by default
    (`casstor store LINK ID`, as cp) it is read as its target."""
    target, link = tmp_path / "target", tmp_path / "link"
    target.write_bytes(b"secret")
    link.symlink_to(target)
    with pytest.raises(CasstorError) as caught:
        with open_source(link, follow_symlinks=False):
            pass
    assert str(caught.value) == f"cannot store {str(link)!r}: is a symlink, not followed"
    assert _read(link) == b"secret"
