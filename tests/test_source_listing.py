"""Listing an ingest source: ids, sizes, and the one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.trees.source_listing import SYMLINK_NOT_FOLLOWED, UNKNOWN_SIZE, list_source


@pytest.fixture()
def src(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "a" / "b").mkdir(parents=True)
    (root / "top.txt").write_bytes(b"12345")
    (root / "a" / "b" / "deep.bin").write_bytes(b"x" * 10)
    (root / "a" / "empty").write_bytes(b"")
    os.mkfifo(root / "a" / "fifo")  # skipped: reading it would block
    return root


def test_directory_ids_are_prefix_plus_posix_relative_path(src: Path) -> None:
    files = list_source(src, prefix="p/")
    assert [(f.file_id, f.size) for f in files] == [("p/a/b/deep.bin", 10), ("p/a/empty", 0), ("p/top.txt", 5)]
    assert all(os.path.isabs(f.path) for f in files)


def test_glob_root_is_the_part_without_wildcards(src: Path) -> None:
    assert [f.file_id for f in list_source(str(src / "**" / "*.bin"))] == ["a/b/deep.bin"]
    assert [f.file_id for f in list_source(str(src / "a*"))] == ["a/b/deep.bin", "a/empty"]


def test_explicit_list_keeps_missing_paths(src: Path) -> None:
    files = list_source([src / "top.txt", src / "a" / "gone", src / "top.txt"])
    assert [(f.file_id, f.size) for f in files] == [("top.txt", 5), ("a/gone", UNKNOWN_SIZE)]


def test_single_file_and_errors(src: Path, tmp_path: Path) -> None:
    assert [f.file_id for f in list_source(src / "top.txt", prefix="x/")] == ["x/top.txt"]
    (tmp_path / "void").mkdir()
    for source, message in [(tmp_path / "missing", "no such file or directory"),
                            (tmp_path / "void", "holds no regular files"),
                            (str(tmp_path / "*.zzz"), "matches no regular files"),
                            ([], "is empty")]:
        with pytest.raises(CasstorError, match=message):
            list_source(source)
    with pytest.raises(CasstorError, match="not below the source root"):
        list_source([src / "top.txt"], root=src / "a")


def _walked(root: Path, prefix: str, follow: bool) -> list[tuple[str, int, str | None]]:
    """(id, size, skipped) of every regular file or link to one, by os.walk, os.stat and os.path.relpath."""
    found = []
    for directory, _, names in os.walk(root):
        for path in (os.path.join(directory, name) for name in names):
            if os.path.isfile(path):  # follows a link: no FIFO, no dangling link
                link = os.path.islink(path) and not follow
                found.append((prefix + os.path.relpath(path, root), 0 if link else os.stat(path).st_size,
                              SYMLINK_NOT_FOLLOWED if link else None))
    return sorted(found)


@pytest.mark.parametrize("follow", [False, True])
def test_one_lstat_a_file_lists_what_stat_and_relpath_say(src: Path, follow: bool) -> None:
    """The listing's one lstat a file and IDs cut from the path: a link to a file is one skipped entry unless
    followed (then its target's size), a dangling link and a FIFO are not listed, and every ID is the prefix and
    the path relative to the root, however the root is spelled."""
    (src / "a" / "link").symlink_to(src / "top.txt")
    (src / "a" / "dangling").symlink_to(src / "nowhere")
    for spelled in (str(src), str(src) + "/", os.path.relpath(src)):
        listed = sorted((f.file_id, f.size, f.skipped) for f in list_source(spelled, "p/", follow_symlinks=follow))
        assert listed == _walked(src, "p/", follow)


def test_a_path_beside_the_root_that_starts_with_its_name_is_refused(tmp_path: Path) -> None:
    """``/x/src2/f`` starts with the text ``/x/src`` but is not below the root ``/x/src``."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src2").mkdir()
    (tmp_path / "src2" / "f").write_bytes(b"f")
    with pytest.raises(CasstorError, match="is not below the source root"):
        list_source([str(tmp_path / "src2" / "f")], root=str(tmp_path / "src"))
