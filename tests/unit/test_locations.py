"""URL sources and destinations through fsspec (``file://``: no node, no Spark): listing, options, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.store.trees.locations import is_url, list_files, parse_storage_options, replacing_writer, resolve
from casstor_ops.store.trees.source_listing import list_source


def test_urls_and_paths() -> None:
    assert [is_url(t) for t in ("s3://b/k", "file:///d", "simplecache::s3://b/k", "hdfs://nn:8020/x")] == [True] * 4
    assert [is_url(t) for t in ("data/tree", "/abs", "a:b", "./s3://x", "", Path("s3://x"))] == [False] * 6


def test_storage_options_decode_json_values_and_refuse_bad_pairs() -> None:
    assert parse_storage_options(["endpoint_url=http://h:9000/?a=b", "anon=true", "n=5", 'kw={"r": "x"}']) == \
        {"endpoint_url": "http://h:9000/?a=b", "anon": True, "n": 5, "kw": {"r": "x"}}
    for bad in ("novalue", "=x"):
        with pytest.raises(CasstorError) as err:
            parse_storage_options([bad])
        assert err.value.exit_code == EXIT_USAGE


def test_an_unknown_protocol_is_a_usage_error() -> None:
    with pytest.raises(CasstorError) as err:
        resolve("nosuchfs://x/y")
    assert err.value.exit_code == EXIT_USAGE and "nosuchfs" in str(err.value)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.bin").write_bytes(b"a" * 10)
    (root / "sub" / "b.txt").write_bytes(b"bb")
    (root / "sub" / "deeper" / "c").write_bytes(b"")
    os.mkfifo(root / "fifo")
    (root / "sub" / "loop").symlink_to(root)  # a symlinked directory is not a file, and is not entered
    return root


def test_a_directory_url_lists_its_files_with_ids_relative_to_it(tree: Path) -> None:
    files = list_source(resolve(tree.as_uri()), prefix="p/")
    assert [(f.file_id, f.size) for f in files] == [("p/a.bin", 10), ("p/sub/b.txt", 2), ("p/sub/deeper/c", 0)]
    assert files[0].path == (tree / "a.bin").as_uri()
    assert [f.file_id for f in list_source(str(tree), prefix="p/")] == [f.file_id for f in files]


def test_a_file_url_and_a_glob_url_have_their_roots(tree: Path) -> None:
    assert list_files(resolve((tree / "sub" / "b.txt").as_uri())) == (str(tree / "sub"), [(str(tree / "sub/b.txt"), 2)])
    root, found = list_files(resolve(tree.as_uri() + "/sub/**/*"))
    assert root == str(tree / "sub") and [p for p, _ in found] == [str(tree / "sub/b.txt"), str(tree / "sub/deeper/c")]


@pytest.mark.parametrize("name, message", [("missing", "no such file or directory"), ("empty", "holds no files")])
def test_a_url_without_files_is_one_error(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(CasstorError, match=message):
        list_files(resolve((tmp_path / name).as_uri()))


def test_a_write_appears_whole_and_an_existing_file_is_kept_unless_forced(tmp_path: Path) -> None:
    fs, path = resolve((tmp_path / "out" / "f.bin").as_uri())
    with replacing_writer(fs, path) as out:
        out.write(b"first")
    assert (tmp_path / "out" / "f.bin").read_bytes() == b"first"
    with pytest.raises(CasstorError, match="already exists"):
        with replacing_writer(fs, path) as out:
            out.write(b"second")
    with replacing_writer(fs, path, force=True) as out:
        out.write(b"third")
    assert (tmp_path / "out" / "f.bin").read_bytes() == b"third"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["f.bin"]


def test_a_write_that_fails_leaves_nothing(tmp_path: Path) -> None:
    """Injects an error after part of the content was written; checks no file and no temporary remain."""
    fs, path = resolve((tmp_path / "f.bin").as_uri())
    with pytest.raises(RuntimeError, match="injected"):
        with replacing_writer(fs, path) as out:
            out.write(b"partial content")
            raise RuntimeError("injected")
    assert list(tmp_path.iterdir()) == []


def test_a_local_write_is_fsynced_before_its_move_and_its_directory_after(tmp_path: Path, monkeypatch) -> None:
    """Injects: a recorder around os.fsync (then the real one), for a file:// write (a crash after a move with
    the content still in the page cache leaves a short file that looks restored). Checks: the temporary file is
    synced whole while DEST does not exist yet, and DEST's directory once DEST is in place."""
    dest = tmp_path / "out" / "f.bin"
    synced = []

    def recording(fd: int) -> None:
        target = Path(os.readlink(f"/proc/self/fd/{fd}"))
        synced.append((target, target.stat().st_size if target.is_file() else None, dest.exists()))
        real_fsync(fd)

    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", recording)
    fs, path = resolve(dest.as_uri())
    with replacing_writer(fs, path) as out:
        out.write(b"x" * 100_000)
    monkeypatch.undo()
    (temporary, size, in_place), (directory, _, in_place_after) = synced
    assert temporary.parent == dest.parent and temporary.name.startswith(".casstor-") and size == 100_000
    assert not in_place and directory == dest.parent and in_place_after
    assert dest.read_bytes() == b"x" * 100_000
