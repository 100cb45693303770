"""Listing an ingest source: ids, sizes, and the one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.trees.source_listing import UNKNOWN_SIZE, list_source


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
