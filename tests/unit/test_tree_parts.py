"""A tree cut into parts, one a client process (`casstor_ops.store.bulk.tree.parts`)."""

from __future__ import annotations

import subprocess
import sys

from casstor_ops.errors import EXIT_USAGE
from casstor_ops.store.bulk.tree import parts, small_batches
from casstor_ops.store.trees.source_listing import SourceFile
from tests.support import ROOT


def _tree(small: int, large: int = 0) -> list[SourceFile]:
    files = [SourceFile(f"d{n // 100:03d}/f{n:05d}", f"d{n // 100:03d}/f{n:05d}", 1_000) for n in range(small)]
    return files + [SourceFile(f"big{n}", f"big{n}", 5 << 20) for n in range(large)]


def _small_files(part: list) -> list[str]:
    return [f.path for item in part if isinstance(item, list) for f in item]


def test_parts_hold_contiguous_runs_of_about_as_many_small_files_and_every_large_file_in_the_first() -> None:
    """5,626 small files (as the bench's tree) and 3 large ones, two processes: two parts whose small files, in
    order, are the tree's, split within one batch (256 files) of the half; the large files in the first part."""
    items = small_batches(_tree(5_626, large=3))
    first, second = parts(items, 2)
    assert [i.path for i in first if isinstance(i, SourceFile)] == ["big0", "big1", "big2"]
    assert not [i for i in second if isinstance(i, SourceFile)]
    assert _small_files(first) + _small_files(second) == [f.path for f in _tree(5_626)]
    assert abs(len(_small_files(first)) - 5_626 / 2) <= 256


def test_a_tree_too_small_for_another_process_stays_in_one_part() -> None:
    """Fewer than MIN_PART_FILES small files a process: one part, the items as they were; and one process asked,
    one part whatever the tree."""
    few = small_batches(_tree(1_500, large=2))
    assert parts(few, 2) == [few]
    many = small_batches(_tree(20_000))
    assert parts(many, 1) == [many] and len(parts(many, 16)) == 16 and len(parts(many, 3)) == 3


def test_processes_out_of_range_is_a_usage_error() -> None:
    for value in ("0", "17", "x"):
        run = subprocess.run([sys.executable, "-m", "casstor_ops.cli.main", "store", "src", "p/", "--processes",
                              value], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert run.returncode == EXIT_USAGE and len(run.stderr.splitlines()) == 1, run.stderr
        assert "--processes" in run.stderr and "takes 1 to 16" in run.stderr
