"""Whole trees with one command on the real node: `casstor store DIR PREFIX` and `casstor restore PREFIX/ DIR`."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from casstor_ops.errors import EXIT_CORRUPT, EXIT_PARTIAL, EXIT_USAGE
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.cql.statements import Statements

from .support import run_casstor, write_tree


def _tree(root: Path) -> dict[str, bytes]:
    rng = random.Random(7)
    files = {"a.txt": b"hello tree\n" * 5000, "sub/b.bin": rng.randbytes(700_000), "sub/deeper/c.bin":
             rng.randbytes(90_000), "empty": b"", "sub/ünï code.txt": "grüße\n".encode() * 100}
    write_tree(root, files)
    os.chmod(root / "a.txt", 0o640)
    return files


def _json(proc) -> dict:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_a_tree_is_stored_in_one_command_then_skipped_when_unchanged(cql, tmp_path: Path) -> None:
    """Stores a 5-file tree (nested, empty, non-ASCII names) with one command; checks the IDs, then that a re-run
    skips every file, and that changing one file or only its mode stores just that file again."""
    src = tmp_path / "src"
    files = _tree(src)
    first = _json(run_casstor("store", str(src), "tree1", "--json", "--workers", "3"))
    assert first["exit_code"] == 0 and {r["status"] for r in first["files"]} == {"stored"}
    assert sorted(r["id"] for r in first["files"]) == sorted(f"tree1/{name}" for name in files)
    assert sum(r["bytes"] for r in first["files"]) == sum(map(len, files.values()))
    again = _json(run_casstor("store", str(src), "tree1/", "--json"))
    assert {r["status"] for r in again["files"]} == {"skipped"}
    (src / "sub/b.bin").write_bytes(b"changed")
    os.chmod(src / "a.txt", 0o600)
    third = _json(run_casstor("store", str(src), "tree1", "--json"))
    stored = sorted(r["id"] for r in third["files"] if r["status"] == "stored")
    assert stored == ["tree1/a.txt", "tree1/sub/b.bin"]
    plain = run_casstor("store", str(src), "tree1")
    assert plain.returncode == 0 and plain.stdout.decode().startswith("store: 5 files, ")


def test_a_prefix_is_restored_below_a_directory_byte_exact(cql, tmp_path: Path) -> None:
    """Restores a stored tree with `casstor restore PREFIX/ DIR`; checks every file byte for byte and the recorded
    mode, that a second restore refuses to overwrite each file (exit 4, one line per file) and --force does."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    files = _tree(src)
    assert run_casstor("store", str(src), "tree2", "--quiet").returncode == 0
    proc = run_casstor("restore", "tree2/", str(dest), "--workers", "2")
    assert proc.returncode == 0 and proc.stdout.decode().startswith("restore: 5 files, "), proc.stderr
    for name, data in files.items():
        assert (dest / name).read_bytes() == data, name
    assert (dest / "a.txt").stat().st_mode & 0o777 == 0o640
    refused = run_casstor("restore", "tree2/", str(dest))
    lines = refused.stderr.decode().splitlines()
    assert refused.returncode == EXIT_PARTIAL and len(lines) == len(files)
    assert all(line.startswith("casstor: failed: tree2/") and "already exists" in line for line in lines)
    assert run_casstor("restore", "tree2/", str(dest), "--force", "--quiet").returncode == 0


def test_a_damaged_file_fails_alone_and_the_restore_exits_3(cql, tmp_path: Path) -> None:
    """Injects a damaged block (content overwritten) into one file of a stored tree; checks the prefix restore
    restores the other files, leaves nothing for the damaged one, names it in one line, and exits 3."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    files = _tree(src)
    assert run_casstor("store", str(src), "tree3", "--quiet").returncode == 0
    head = cql.execute(Statements.for_session(cql).head, ("tree3/sub/b.bin",)).one()
    block = next(iter(cql.execute(Statements.for_session(cql).file_blocks, ("tree3/sub/b.bin", head.version))))
    cql.execute(cql.prepare(f"UPDATE {DATA_KS}.blocks SET content = ? WHERE hash = ?"), (b"rot", block.hash))
    proc = run_casstor("restore", "tree3/", str(dest))
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == EXIT_CORRUPT and len(lines) == 1 and lines[0].startswith("casstor: corrupt: tree3/sub/b.bin")
    assert not (dest / "sub/b.bin").exists()
    assert all((dest / n).read_bytes() == d for n, d in files.items() if n != "sub/b.bin")


def test_bad_tree_arguments_are_one_line_errors(cql, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"x")
    for proc, expected in [
        (run_casstor("store", str(tmp_path / "src"), "/abs"), "prefix '/abs/' cannot start a file ID"),
        (run_casstor("restore", "no-such-prefix/", str(tmp_path / "out")), "no file in the store has an id"),
        (run_casstor("restore", "x/", str(tmp_path / "src" / "f")), "exists and is not a directory"),
    ]:
        lines = proc.stderr.decode().splitlines()
        assert proc.returncode != 0 and len(lines) == 1 and expected in lines[0], proc.stderr
    assert run_casstor("store", str(tmp_path / "src"), "/abs").returncode == EXIT_USAGE
