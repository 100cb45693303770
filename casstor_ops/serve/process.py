"""``casstor serve`` as a child process on a free port: for tests, benchmarks and scripts that need a server.

Starts ``python -m casstor_ops.cli.main serve --port 0 ARGS…`` with this
interpreter and the current environment (so it reaches the same store),
reads its ``listening on`` line for the port, and stops it with SIGTERM.

Example::

    >>> server = ServerProcess("--read-only")                  # doctest: +SKIP
    >>> urllib.request.urlopen(server.url("photos/a b.jpg"))   # doctest: +SKIP
    >>> server.stop()                                          # doctest: +SKIP
    (0, 'casstor serve: listening on http://127.0.0.1:41873/ ...')

``metrics_port`` is the ``--metrics-port`` the server listens on (None without it).

Failures: a server that exits or does not listen within ``start_timeout_s``
raises :class:`~casstor_ops.errors.CasstorError` with its log (it is killed
if still running).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from urllib.parse import quote

from casstor_ops.errors import CasstorError

_LISTENING = re.compile(r"listening on (https?)://(\S+):(\d+)/")
_METRICS = re.compile(r"metrics on https?://\S+:(\d+)/metrics")


class ServerProcess:
    """A running ``casstor serve``; ``stop()`` it."""

    def __init__(self, *args: str, start_timeout_s: float = 60.0) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "casstor_ops.cli.main", "serve", "--port", "0", *args],
                                        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=os.environ.copy())
        self._log: list[str] = []
        deadline = time.monotonic() + start_timeout_s
        while time.monotonic() < deadline:
            line = self.process.stderr.readline().decode(errors="replace")
            if not line:
                break
            self._log.append(line)
            found = _LISTENING.search(line)
            if found:
                self.scheme, self.host, self.port = found.group(1), found.group(2), int(found.group(3))
                metrics = _METRICS.search(line)
                self.metrics_port = int(metrics.group(1)) if metrics else None
                # Read on, so a server that logs a lot never blocks on a full pipe.
                self._reader = threading.Thread(target=self._read_log, daemon=True)
                self._reader.start()
                return
        self.process.kill()
        self.process.wait()
        raise CasstorError(f"casstor serve did not start: {''.join(self._log) or 'no output'}")

    def url(self, key: str) -> str:
        """The URL of ``key`` (percent-encoded, '/' kept)."""
        return f"{self.scheme}://{self.host}:{self.port}/{quote(key)}"

    def _read_log(self) -> None:
        for line in self.process.stderr:
            self._log.append(line.decode(errors="replace"))

    @property
    def log(self) -> str:
        """What the server wrote to stderr so far."""
        return "".join(self._log)

    def terminate(self) -> None:
        """Send SIGTERM (once: uvicorn takes a second one as "stop now, cancel what runs")."""
        self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float = 30.0) -> tuple[int, str]:
        """Wait for the server to exit; the exit status and the whole log (stderr)."""
        code = self.process.wait(timeout=timeout_s)
        self._reader.join(timeout_s)
        return code, self.log

    def stop(self, timeout_s: float = 30.0) -> tuple[int, str]:
        """SIGTERM, then wait; the exit status and the whole log (stderr)."""
        self.terminate()
        return self.wait(timeout_s)
