"""Listing faults without Cassandra or Spark: unreadable directories, symlinked directories and loops, odd names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.trees.source_listing import SYMLINK_NOT_FOLLOWED, UNKNOWN_SIZE, list_source
from tests.support import ROOT

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture()
def shared_tree():
    """A tree another user can reach (pytest's tmp_path is root-only): top.txt, ok/a.txt and locked/b.txt."""
    base = Path(tempfile.mkdtemp(prefix="hG-listing-"))
    base.chmod(0o755)
    (base / "ok").mkdir()
    (base / "locked").mkdir()
    (base / "top.txt").write_bytes(b"top")
    (base / "ok" / "a.txt").write_bytes(b"a")
    (base / "locked" / "b.txt").write_bytes(b"b")
    (base / "locked").chmod(0o700)  # root reads it anyway: the listing runs as nobody
    yield base
    shutil.rmtree(base)


def _list_as_nobody(source: Path, prefix: str) -> subprocess.CompletedProcess:
    code = ("import json, sys; from casstor_ops.store.trees.source_listing import list_source; "
            "print(json.dumps(list_source(sys.argv[1], prefix=sys.argv[2])))")
    return subprocess.run([*NOBODY, sys.executable, "-c", code, str(source), prefix], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs root and setpriv")
def test_unreadable_directory_is_a_failed_entry_with_its_path_and_error(shared_tree: Path) -> None:
    """Injects a directory its user cannot read (mode 700, listed as nobody: as root chmod does not bite);
    checks it is one entry, id 'p/locked/', with a one-line 'Permission denied' error, next to the readable
    files (os.walk used to skip it silently, and the job exited 0)."""
    run = _list_as_nobody(shared_tree, "p/")
    assert run.returncode == 0, run.stderr
    entries = {entry[1]: entry for entry in json.loads(run.stdout)}
    assert set(entries) == {"p/top.txt", "p/ok/a.txt", "p/locked/"}
    path, _, size, error, skipped = entries["p/locked/"]
    assert (path, size) == (str(shared_tree / "locked"), UNKNOWN_SIZE)
    assert (error, skipped) == ("cannot list the directory: Permission denied", None)
    assert entries["p/top.txt"][3] is None


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs root and setpriv")
def test_unreadable_source_root_is_one_error(shared_tree: Path) -> None:
    """Injects an unreadable source root (as nobody); checks one 'casstor'-style error line, not an empty job."""
    run = _list_as_nobody(shared_tree / "locked", "")
    assert run.returncode != 0
    assert "CasstorError" in run.stderr and "cannot list the directory: Permission denied" in run.stderr


@pytest.fixture()
def linked_tree(tmp_path: Path) -> Path:
    """src/real/a.bin, src/loop -> src (a cycle), src/out -> outside/ (a tree beside the source)."""
    src, outside = tmp_path / "src", tmp_path / "outside"
    (src / "real").mkdir(parents=True)
    outside.mkdir()
    (src / "real" / "a.bin").write_bytes(b"a")
    (outside / "secret.bin").write_bytes(b"s")
    (src / "loop").symlink_to(src)
    (src / "out").symlink_to(outside)
    return src


@pytest.mark.parametrize("pattern", ["**/*.bin", "*/*.bin", "**"])
def test_glob_does_not_enter_symlinked_directories_unless_asked(linked_tree: Path, pattern: str) -> None:
    """Injects a symlink cycle and a symlink to a directory outside the tree under a glob source; checks only the
    tree's own file is listed (glob.glob went through both, and round the cycle)."""
    ids = [f.file_id for f in list_source(str(linked_tree / pattern))]
    assert ids == ["real/a.bin"]


@pytest.mark.parametrize("source", ["dir", "**/*.bin", "**"])
def test_following_symlinks_never_loops(linked_tree: Path, source: str) -> None:
    """Injects the same cycle with follow_symlinks; checks the listing ends, enters the outside link, and lists
    each directory once (the cycle back to the root adds nothing)."""
    text = str(linked_tree) if source == "dir" else str(linked_tree / source)
    ids = [f.file_id for f in list_source(text, follow_symlinks=True)]
    assert ids == ["out/secret.bin", "real/a.bin"]


def test_undecodable_names_get_escaped_ids(tmp_path: Path) -> None:
    """Injects a file named b"caf\\xe9.txt" (not UTF-8) in a directory and a glob source; checks its id is the
    escaped text (a valid ID), where it used to be a lone surrogate the store refused."""
    root = os.fsencode(tmp_path)
    os.makedirs(root + b"/src/d\xff")
    with open(root + b"/src/d\xff/caf\xe9.txt", "wb") as out:
        out.write(b"x")
    assert [f.file_id for f in list_source(tmp_path / "src", prefix="p/")] == ["p/d\ufffdFF/caf\ufffdE9.txt"]
    assert [f.file_id for f in list_source(str(tmp_path / "src" / "*" / "*.txt"))] == ["d\ufffdFF/caf\ufffdE9.txt"]


def test_a_missing_glob_root_is_still_an_error(tmp_path: Path) -> None:
    """Injects a glob under a directory that does not exist; checks the usual one-line error, not a failed entry."""
    with pytest.raises(CasstorError, match="matches no regular files"):
        list_source(str(tmp_path / "nope" / "*.bin"))


@pytest.mark.parametrize("source", ["dir", "glob", "file", "list"])
def test_a_link_to_a_file_is_a_skipped_entry_unless_following(linked_tree: Path, source: str) -> None:
    """Injects a symlink to a file outside the tree (a stand-in for /etc/shadow), found in a directory or glob, or
    named alone or in a list; checks it is an entry marked skipped (symlink, not followed) with size 0, never
    listed as a file to read (it used to be followed), and listed as its target's file with follow_symlinks."""
    link = linked_tree / "real" / "shadow"
    link.symlink_to(linked_tree.parent / "outside" / "secret.bin")
    text = {"dir": str(linked_tree), "glob": str(linked_tree / "**" / "shadow"), "file": str(link),
            "list": [linked_tree / "real" / "a.bin", link]}[source]
    skipped = [f for f in list_source(text, root=linked_tree) if f.skipped]
    assert [(f.file_id, f.size, f.skipped) for f in skipped] == [("real/shadow", 0, SYMLINK_NOT_FOLLOWED)]
    followed = {f.file_id: f for f in list_source(text, root=linked_tree, follow_symlinks=True)}
    assert (followed["real/shadow"].size, followed["real/shadow"].skipped) == (1, None)
