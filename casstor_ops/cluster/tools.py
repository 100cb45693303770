"""Run an external tool (openssl, keytool, javac, mvn, Cassandra's nodetool and sstablescrub) to its end.

Every tool the cluster code runs fails the same way for the user: one
``casstor:`` line naming what was run, never a traceback. Its output is
captured; on success its standard output is returned.

Example::

    >>> run_tool(["openssl", "version"], "openssl version", timeout=30)   # doctest: +SKIP
    'OpenSSL 3.0.17 1 Jul 2025 (Library: OpenSSL 3.0.17 1 Jul 2025)\\n'

Failures, each a one-line :class:`~casstor_ops.errors.CasstorError`: a
binary that cannot be run (missing: with ``install``'s advice), a tool still
running after ``timeout`` seconds (killed), a non-zero exit (its last
:data:`TAIL_LINES` lines of output, joined with `` | ``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from casstor_ops.errors import CasstorError

TAIL_LINES = 3


def run_tool(cmd: Sequence[str], what: str, timeout: float, cwd: Path | None = None,
             env: Mapping[str, str] | None = None, install: str | None = None) -> str:
    """Run ``cmd`` (described as ``what`` in errors) in ``cwd``; its standard output (see the module docstring)."""
    try:
        proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except OSError as err:
        advice = f": install it with '{install}'" if install and isinstance(err, FileNotFoundError) else ""
        raise CasstorError(f"{what}: cannot run {cmd[0]}: {err.strerror or err}{advice}") from None
    except subprocess.TimeoutExpired:
        raise CasstorError(f"{what} did not finish within {timeout:.0f} s and was stopped") from None
    if proc.returncode != 0:
        tail = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip()][-TAIL_LINES:]
        raise CasstorError(f"{what} failed (exit status {proc.returncode}): {' | '.join(tail) or 'no output'}")
    return proc.stdout
