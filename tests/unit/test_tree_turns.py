"""A tree stored by client processes: how many (`casstor_ops.store.bulk.tree.process_count`), and each item taken
once, in turn (`casstor_ops.store.bulk.tree_processes._Turns`)."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys

from casstor_ops.errors import EXIT_USAGE
from casstor_ops.store.bulk.tree import process_count, small_batches
from casstor_ops.store.bulk.tree_processes import _Turns
from casstor_ops.store.trees.source_listing import SourceFile
from tests.support import ROOT


def _tree(small: int, large: int = 0) -> list[SourceFile]:
    files = [SourceFile(f"d{n // 100:03d}/f{n:05d}", f"d{n // 100:03d}/f{n:05d}", 1_000) for n in range(small)]
    return files + [SourceFile(f"big{n}", f"big{n}", 5 << 20) for n in range(large)]


def test_a_process_for_every_thousand_small_files_up_to_those_asked() -> None:
    """The bench's 5,626 small files and 3 large ones: two processes of two asked; 1,500 small files and 2 large
    ones: one (a file stored alone counts for none); 20,000: as many as asked, up to 16."""
    assert process_count(small_batches(_tree(5_626, large=3)), 2) == 2
    assert process_count(small_batches(_tree(1_500, large=2)), 2) == 1
    many = small_batches(_tree(20_000))
    assert [process_count(many, asked) for asked in (1, 3, 16)] == [1, 3, 16]


def test_takers_of_one_turn_take_every_item_once_in_order() -> None:
    """Three takers of one turn, asking in an uneven round: together they take each item once, in order."""
    turns = _Turns(multiprocessing.get_context("spawn"))
    items = list(range(50))
    takers = [turns.taken(items) for _ in range(3)]
    seen, done, step = [], set(), 0
    while len(done) < 3:
        taker = step % 3 if step % 5 else 0  # the first asks twice as often
        value = next(takers[taker], None)
        if value is None:
            done.add(taker)
        else:
            seen.append(value)
        step += 1
    assert seen == items


def test_processes_out_of_range_is_a_usage_error() -> None:
    for value in ("0", "17", "x"):
        run = subprocess.run([sys.executable, "-m", "casstor_ops.cli.main", "store", "src", "p/", "--processes",
                              value], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert run.returncode == EXIT_USAGE and len(run.stderr.splitlines()) == 1, run.stderr
        assert "--processes" in run.stderr and "expected 1 to 16 processes" in run.stderr
