"""bench.small_files' corpora: the small tree and the tars as given, and the random corpus of issue 29's other
large-file workload written fresh, or left out with --random-mb 0 (no node, no peers: only the files)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

from bench.common import random_files
from bench.small_files import RANDOM_FILES, _corpora

MIB = 1 << 20


def test_random_files_are_fresh_incompressible_bytes_of_the_asked_total(tmp_path: Path) -> None:
    paths = random_files(tmp_path / "made" / "here", 3, 2)
    assert [p.name for p in paths] == ["random-0.bin", "random-1.bin"]
    assert [p.stat().st_size for p in paths] == [3 * MIB // 2] * 2
    assert paths[0].read_bytes() != paths[1].read_bytes()


def _args(tmp_path: Path, random_mb: int) -> Namespace:
    for name in ("tree", "tars"):
        (tmp_path / name).mkdir(exist_ok=True)
    return Namespace(tree=tmp_path / "tree", tars=tmp_path / "tars", random_mb=random_mb, quick=False)


def test_the_random_corpus_is_a_directory_of_its_own_beside_the_given_ones(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    corpora, packages = _corpora(_args(tmp_path, 2), tmp_path / "work")
    assert list(corpora) == ["small", "tars", "random"] and packages == {}
    assert corpora["small"] == (tmp_path / "tree").resolve() and corpora["tars"] == (tmp_path / "tars").resolve()
    written = sorted(corpora["random"].iterdir())
    assert len(written) == RANDOM_FILES and sum(p.stat().st_size for p in written) == 2 * MIB


def test_random_mb_0_leaves_the_random_corpus_out(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    corpora, _ = _corpora(_args(tmp_path, 0), tmp_path / "work")
    assert list(corpora) == ["small", "tars"] and not (tmp_path / "work" / "random").exists()
