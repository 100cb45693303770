"""Command-line tools a benchmark runs (restic, borg, wrk), installed from Debian's packages when they are missing.

:class:`ToolRepo` is what the backup peers (:mod:`bench.restic`,
:mod:`bench.borg`) share: a repository in a directory of its own, the
tool's commands run with its environment, its bytes on disk.

Example::

    >>> ensure_tool("wrk", "wrk", "run the bench with --client python")   # doctest: +SKIP
    '/usr/bin/wrk'

Failures: a tool that is missing and cannot be installed (no apt-get, not
root, the package unavailable) raises
:class:`~casstor_ops.errors.CasstorError` naming the package and
``alternative`` (what to do instead); so does a :class:`ToolRepo` command
that fails, with the tool's last line of output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

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


class ToolRepo:
    """A backup tool's repository at ``root / "repo"``: ``run`` runs the tool with ``env`` added to the environment."""

    def __init__(self, tool: str, root: Path, env: dict[str, str]) -> None:
        self.tool, self.root, self.repo = tool, Path(root), Path(root) / "repo"
        self._env = {**os.environ, **env}

    def run(self, *args: str, cwd: Path | None = None) -> str:
        """The tool's standard output; a failure raises :class:`CasstorError` with its last line."""
        proc = subprocess.run([self.tool, *args], capture_output=True, text=True, env=self._env, cwd=cwd)
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            raise CasstorError(f"{Path(self.tool).name} {args[0]} failed: "
                               f"{lines[-1] if lines else f'exit {proc.returncode}'}")
        return proc.stdout

    def version(self) -> str:
        """The tool's version number (the second word of ``TOOL --version``)."""
        return self.run("--version").split()[1]

    def repo_bytes(self) -> int:
        """Bytes on disk of the repository (data, indexes, snapshots or archives)."""
        return sum(p.stat().st_size for p in self.repo.rglob("*") if p.is_file())
