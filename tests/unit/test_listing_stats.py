"""The listing's one lstat a file and its IDs cut from the path, against what os.walk, os.stat and relpath say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.trees.source_listing import SYMLINK_NOT_FOLLOWED, list_source


@pytest.fixture()
def odd_tree(tmp_path: Path) -> Path:
    """Nested files, a symlink to a file, a dangling symlink, a FIFO and an empty file."""
    root = tmp_path / "tree"
    (root / "a" / "b").mkdir(parents=True)
    (root / "top.txt").write_bytes(b"top")
    (root / "a" / "b" / "deep.bin").write_bytes(b"x" * 1000)
    (root / "a" / "empty").write_bytes(b"")
    (root / "a" / "link").symlink_to(root / "top.txt")
    (root / "a" / "dangling").symlink_to(root / "nowhere")
    os.mkfifo(root / "a" / "fifo")
    return root


def _expected(root: Path, prefix: str, follow: bool) -> list[tuple[str, int, str | None]]:
    """(id, size, skipped) of every regular file or link to one, by os.walk, os.stat and os.path.relpath."""
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.isfile(path):  # follows a link: no FIFO, no dangling link
                continue
            link = os.path.islink(path) and not follow
            found.append((prefix + os.path.relpath(path, root), 0 if link else os.stat(path).st_size,
                          SYMLINK_NOT_FOLLOWED if link else None))
    return sorted(found)


@pytest.mark.parametrize("follow", [False, True])
def test_a_tree_lists_what_stat_and_relpath_say(odd_tree: Path, follow: bool) -> None:
    """A link to a file is one skipped entry unless followed (then its target's size); a dangling link and a FIFO
    are not listed; every ID is the prefix and the path relative to the root, however the root is spelled."""
    for spelled in (str(odd_tree), str(odd_tree) + "/", os.path.relpath(odd_tree)):
        listed = sorted((f.file_id, f.size, f.skipped) for f in list_source(spelled, "p/", follow_symlinks=follow))
        assert listed == _expected(odd_tree, "p/", follow)


def test_a_path_beside_the_root_with_its_name_as_a_start_is_refused(tmp_path: Path) -> None:
    """``/x/tree2/f`` starts with the text ``/x/tree`` but is not below the root ``/x/tree``."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree2").mkdir()
    (tmp_path / "tree2" / "f").write_bytes(b"f")
    with pytest.raises(CasstorError, match="is not below the source root"):
        list_source([str(tmp_path / "tree2" / "f")], root=str(tmp_path / "tree"))
