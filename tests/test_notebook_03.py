"""notebooks/03_exists_query_study.ipynb runs headless in smoke mode, draws every plot, concludes from data."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd

from .support import run_notebook

PLOTS = ["03_tables.png", "03_queries.png", "03_row_cache.png", "03_harness.png"]


def _markdown_outputs(notebook: Path) -> str:
    nb = nbformat.read(notebook, as_version=4)
    return "".join(out.get("data", {}).get("text/markdown", "") for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.get("outputs", []))


def test_notebook_03_smoke(local_cluster, tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    executed = run_notebook("03_exists_query_study.ipynb", tmp_path, smoke=True, plots_dir=str(plots))

    for name in PLOTS:
        assert (plots / name).stat().st_size > 10_000, name  # a rendered chart, not an empty file
    summary = pd.read_csv(plots / "03_stress_summary.csv")
    reads = summary[summary.ops != "insert"]
    assert {"exists_one", "exists_five", "exists_count"} <= set(reads.ops)
    assert set(reads.threads) == {4, 16}
    assert (summary.op_rate > 0).all() and (summary.p95_ms > 0).all() and (summary.errors == 0).all()
    assert set(summary.row_cache.dropna()) == {"existing_blocks, row cache off", "existing_blocks, row cache on"}
    harness = pd.read_csv(plots / "03_harness.csv")
    assert (harness.blocks_per_s > 0).all() and (harness.blocks_found == harness.blocks_checked).all()
    assert list((plots / "stress").glob("*/t4.log"))  # raw cassandra-stress logs kept beside the results

    conclusions = _markdown_outputs(executed)
    ratio = harness.set_index(["query", "concurrency"]).blocks_per_s
    expected = ratio["exists_five", 16] / ratio["exists_one", 16]
    assert f"IN(5) checks {expected:.2f}x" in conclusions  # computed from the measurements, not typed in
    assert "rows per query" in conclusions and "row cache on" in conclusions
