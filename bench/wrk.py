"""wrk, the HTTP load generator of ``bench.serve``: run a Lua script of ``bench/wrk/`` and read its summary.

``wrk`` (Debian's package, 4.1) is installed with apt-get when missing
(:func:`bench.debian_tools.ensure_tool`). One thread (``-t 1``, as the
issue's reference figures), C connections, a fixed duration; the scripts
print their summary as one JSON line (``report.lua``), so nothing is parsed
from wrk's human-readable output:

* ``put.lua``: PUTs distinct bodies of one size to new keys under a prefix;
* ``get.lua``: GETs random keys of a loaded set (a file of paths).

Example::

    >>> run_wrk("put.lua", "http://127.0.0.1:8080/", connections=20, seconds=30,
    ...         args=["/bench/x", "65536", "/tmp/random.bin"])                   # doctest: +SKIP
    WrkRun(requests=5210, seconds=30.01, p50_ms=98.1, p99_ms=310.2)

Failures: wrk missing and not installable, wrk failing, or a run with
failed requests (a connection error, a timeout, a status >= 400) raise
:class:`~casstor_ops.errors.CasstorError` (figures with errors in them would
mislead).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.debian_tools import ensure_tool
from casstor_ops.errors import CasstorError

SCRIPTS = Path(__file__).resolve().parent / "wrk"
TIMEOUT_S = 60  # per request: a 1 MB PUT waits for a write thread under 20 connections
_RESULT = "WRK_RESULT "


@dataclass(frozen=True)
class WrkRun:
    """One wrk run (every request succeeded): completed requests, seconds, latency percentiles (ms)."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def per_s(self) -> float:
        return self.requests / self.seconds


def run_wrk(script: str, url: str, connections: int, seconds: float, args: list[str]) -> WrkRun:
    """Run ``bench/wrk/<script>`` against ``url`` (see the module docstring)."""
    wrk = ensure_tool("wrk", "wrk", "install wrk")
    command = [wrk, "-t", "1", "-c", str(connections), "-d", f"{seconds:g}s", "--timeout", f"{TIMEOUT_S}s",
               "-s", str(SCRIPTS / script), url, "--", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 2 * TIMEOUT_S + 60,
                          env={**os.environ, "CASSTOR_WRK_DIR": str(SCRIPTS)})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(_RESULT)), None)
    if proc.returncode != 0 or line is None:
        raise CasstorError(f"wrk {script} failed (exit {proc.returncode}): {(proc.stderr or proc.stdout)[-300:]}")
    result = json.loads(line[len(_RESULT):])
    errors = sum(result["errors"].values())
    if errors:
        raise CasstorError(f"wrk {script}: {errors} of {result['requests']} requests failed: {result['errors']}")
    latency = result["latency_us"]
    return WrkRun(result["requests"], result["duration_us"] / 1e6, latency["p50"] / 1000, latency["p99"] / 1000)
