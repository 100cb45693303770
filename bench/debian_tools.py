"""Command-line tools a benchmark runs (restic, wrk), installed from Debian's packages when they are missing.

Example::

    >>> ensure_tool("wrk", "wrk", "run the bench with --client python")   # doctest: +SKIP
    '/usr/bin/wrk'

Failures: a tool that is missing and cannot be installed (no apt-get, not
root, the package unavailable) raises
:class:`~casstor_ops.errors.CasstorError` naming the package and
``alternative`` (what to do instead).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from casstor_ops.errors import CasstorError


def _apt_get(*args: str) -> bool:
    proc = subprocess.run(["apt-get", *args], capture_output=True, text=True,
                          env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    return proc.returncode == 0


def ensure_tool(command: str, package: str, alternative: str) -> str:
    """The path of ``command``, installing Debian's ``package`` first when it is missing."""
    found = shutil.which(command)
    if found:
        return found
    if shutil.which("apt-get") is None:
        raise CasstorError(f"{command} is not installed and apt-get is unavailable: install {package} or "
                           f"{alternative}")
    if not _apt_get("install", "-y", package):
        # A fresh machine may have no package lists yet.
        _apt_get("update")
        if not _apt_get("install", "-y", package):
            raise CasstorError(f"{command} is not installed and 'apt-get install -y {package}' failed "
                               f"(run it as root, or {alternative})")
    found = shutil.which(command)
    if not found:
        raise CasstorError(f"apt-get installed {package} but {command} is not on PATH")
    return found
