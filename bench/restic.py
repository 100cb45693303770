"""restic, the peer casstor is compared with: install it, back up, restore, count what it stored.

restic comes from Debian's package (0.14 on bookworm); :func:`ensure_restic`
installs it with ``apt-get`` when it is missing. A :class:`ResticRepo` is a
repository in a directory of its own, with a fixed password and its own
cache directory inside it, so a run never touches a user's restic set-up.

Example::

    >>> repo = ResticRepo(tmp / "restic")                      # doctest: +SKIP
    >>> snapshot, seconds = repo.backup([tmp / "new"])          # doctest: +SKIP
    >>> repo.restore(snapshot, tmp / "out")                     # doctest: +SKIP
    1.9
    >>> repo.raw_data_bytes()                                   # doctest: +SKIP
    268443541

The repository and its commands are a :class:`~bench.debian_tools.ToolRepo`.

Failures: restic missing and not installable, or a restic command that
fails, raise :class:`~casstor_ops.errors.CasstorError` with restic's last
line of output.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from bench.debian_tools import ToolRepo, ensure_tool
from casstor_ops.errors import CasstorError

# Not a secret: the repository is a throw-away under the bench's temp directory.
PASSWORD = "casstor-bench"


def ensure_restic() -> str:
    """The path of ``restic``, installing Debian's package first when it is missing."""
    return ensure_tool("restic", "restic", "run the bench with --no-restic")


class ResticRepo(ToolRepo):
    """A restic repository under ``root`` (created by the constructor), its cache inside ``root``."""

    def __init__(self, root: Path) -> None:
        super().__init__(ensure_restic(), root, {"RESTIC_PASSWORD": PASSWORD,
                                                "RESTIC_REPOSITORY": str(Path(root) / "repo"),
                                                "RESTIC_CACHE_DIR": str(Path(root) / "cache")})
        self.run("init")

    def version(self) -> str:
        return self.run("version").split()[1]

    def backup(self, paths: list[Path]) -> tuple[str, float]:
        """Back up ``paths``; returns (snapshot id, seconds)."""
        start = time.perf_counter()
        out = self.run("backup", "--json", "--host", "casstor-bench", *map(str, paths))
        seconds = time.perf_counter() - start
        for line in reversed(out.splitlines()):
            message = json.loads(line)
            if message.get("message_type") == "summary":
                return message["snapshot_id"], seconds
        raise CasstorError("restic backup printed no summary")

    def restore(self, snapshot: str, target: Path) -> float:
        """Restore ``snapshot`` under ``target``; returns seconds."""
        start = time.perf_counter()
        self.run("restore", snapshot, "--target", str(target))
        return time.perf_counter() - start

    def raw_data_bytes(self) -> int:
        """Bytes of the blobs the repository stores for all snapshots (``stats --mode raw-data``)."""
        return int(json.loads(self.run("stats", "--mode", "raw-data", "--json"))["total_size"])
