"""notebooks/04_store_restore_throughput.ipynb runs headless in smoke mode and draws every plot."""

from __future__ import annotations

import json
from pathlib import Path

from .support import printed_output, run_notebook

PLOTS = ["store_restore_throughput.png", "store_restore_raw_driver_sweep.png", "store_restore_dedup.png"]


def test_notebook_04_smoke(cql, tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    executed = run_notebook("04_store_restore_throughput.ipynb", tmp_path, smoke=True, plots_dir=str(plots))

    for name in PLOTS:
        assert (plots / name).stat().st_size > 10_000, name  # a rendered chart, not an empty file
    printed = printed_output(executed)
    figures = json.loads(next(line for line in printed.splitlines() if line.startswith("figures: "))[9:])
    assert {"store_new", "store_dup", "restore", "raw_write_best", "raw_read_best", "chunk_hash_one_core",
            "restic_backup", "restic_restore"} <= set(figures)
    assert all(value > 0 for value in figures.values()), figures
    assert "store_new_vs_raw_write" in printed and "goal >= 0.9" in printed  # conclusions were printed
