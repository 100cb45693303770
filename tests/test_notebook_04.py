"""notebooks/04_store_restore_throughput.ipynb runs headless with its defaults in smoke mode and draws every plot
under the project's plots/, from the project root and (slow) from notebooks/."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .support import NOTEBOOKS, ROOT, printed_output, run_notebook

PLOTS = ["store_restore_throughput.png", "store_restore_raw_driver_sweep.png", "store_restore_dedup.png"]


@pytest.mark.parametrize("cwd", [ROOT, pytest.param(NOTEBOOKS, marks=pytest.mark.slow)],
                         ids=["project-root", "notebooks-dir"])
def test_notebook_04_smoke(cql, tmp_path: Path, cwd: Path) -> None:
    started = time.time()
    executed = run_notebook("04_store_restore_throughput.ipynb", tmp_path, cwd=cwd, smoke=True)

    for name in PLOTS:
        plot = ROOT / "plots" / name
        assert plot.stat().st_mtime >= started and plot.stat().st_size > 10_000, name  # drawn by this run
    assert not (NOTEBOOKS / "plots").exists()
    printed = printed_output(executed)
    figures = json.loads(next(line for line in printed.splitlines() if line.startswith("figures: "))[9:])
    assert {"store_new", "store_dup", "restore", "raw_write_best", "raw_read_best", "chunk_hash_one_core",
            "restic_backup", "restic_restore"} <= set(figures)
    assert all(value > 0 for value in figures.values()), figures
    assert "store_new_vs_raw_write" in printed and "goal >= 0.9" in printed  # conclusions were printed
