"""borg, the second peer casstor is compared with: back a directory up into an archive, extract it, count the bytes.

borg comes from Debian's ``borgbackup`` package (1.2 on bookworm);
:func:`ensure_borg` installs it with ``apt-get`` when it is missing. A
:class:`BorgRepo` is an unencrypted repository (``borg init -e none``) in a
directory of its own, with borg's cache, config and keys inside it
(``BORG_BASE_DIR``), so a run never touches a user's borg set-up; its files
cache lives as long as the repository, so a second ``create`` of an unchanged
directory is borg's unchanged re-run. Archives use ``--compression zstd,3``
(casstor's default codec and level).

Example::

    >>> repo = BorgRepo(tmp / "borg")                          # doctest: +SKIP
    >>> archive = repo.create(tmp / "tree")                    # doctest: +SKIP
    >>> repo.extract(archive, tmp / "out")                     # doctest: +SKIP
    PosixPath('/tmp/.../out/tree')
    >>> repo.repo_bytes()                                      # doctest: +SKIP
    51503287

Failures: borg missing and not installable, or a borg command that fails,
raise :class:`~casstor_ops.errors.CasstorError` with borg's last line of
output (:class:`~bench.debian_tools.ToolRepo`).
"""

from __future__ import annotations

from pathlib import Path

from bench.debian_tools import ToolRepo, ensure_tool

COMPRESSION = "zstd,3"


def ensure_borg() -> str:
    """The path of ``borg``, installing Debian's ``borgbackup`` first when it is missing."""
    return ensure_tool("borg", "borgbackup", "install borgbackup")


class BorgRepo(ToolRepo):
    """An unencrypted borg repository under ``root`` (created by the constructor)."""

    def __init__(self, root: Path) -> None:
        super().__init__(ensure_borg(), root, {"BORG_REPO": str(Path(root) / "repo"),
                                              "BORG_BASE_DIR": str(Path(root) / "home"),
                                              "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes"})
        self.root.mkdir(parents=True)
        self._trees: dict[str, str] = {}  # archive name -> the name of the directory it holds
        self.run("init", "--encryption", "none")

    def create(self, tree: Path) -> str:
        """Back up the directory ``tree`` as a new archive, its paths relative to its parent; the archive's name."""
        name = f"archive-{len(self._trees) + 1}"
        self._trees[name] = tree.name
        self.run("create", "--compression", COMPRESSION, f"::{name}", tree.name, cwd=tree.parent)
        return name

    def extract(self, archive: str, target: Path) -> Path:
        """Extract ``archive`` into the new directory ``target``; the path the tree was restored to."""
        target.mkdir(parents=True)
        self.run("extract", f"::{archive}", cwd=target)
        return target / self._trees[archive]
