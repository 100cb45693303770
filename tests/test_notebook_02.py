"""notebooks/02_dedup_report.ipynb runs headless (papermill) on a small store and writes its plots."""

from __future__ import annotations

import json
import os
from pathlib import Path

from casstor_ops.store.api import Store

from .support import run_notebook


def test_notebook_shows_report_and_writes_plots(empty_store, tmp_path: Path) -> None:
    shared = os.urandom(300_000)
    with Store(empty_store) as store:
        for i in range(4):
            (tmp_path / f"f{i}").write_bytes(shared + os.urandom(50_000))
            store.put(tmp_path / f"f{i}", f"nb02/{i % 2}/f{i}")
        core = store.stats().as_dict()
    out = tmp_path / "plots"
    executed = run_notebook("02_dedup_report.ipynb", tmp_path, plots_dir=str(out), top=5, prefix_depth=2,
                            master="local[2]")
    for name in ("block_sizes", "prefixes", "most_shared_blocks", "largest_files"):
        assert (out / f"{name}.png").stat().st_size > 5_000, name
    totals = json.loads((out / "dedup_stats.json").read_text())["totals"]
    assert {k: totals[k] for k in core} == core and totals["files"] == 4
    outputs = [out for cell in json.loads(executed.read_text())["cells"] if cell["cell_type"] == "code"
               for out in cell.get("outputs", [])]
    text = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "casstor dedup report" in text and "nb02/0" in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 4
