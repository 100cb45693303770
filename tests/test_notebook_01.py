"""notebooks/01_bulk_ingest.ipynb runs headless (papermill) with its defaults in smoke mode, from the project root
and (slow) from notebooks/ (Jupyter Lab's working directory), and writes its plot under the project's plots/."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .support import NOTEBOOKS, ROOT, run_notebook

PLOT = ROOT / "plots" / "01_bulk_ingest_throughput.png"


@pytest.mark.parametrize("cwd", [ROOT, pytest.param(NOTEBOOKS, marks=pytest.mark.slow)], ids=["project-root", "notebooks-dir"])
def test_notebook_ingests_sample_and_writes_plot(empty_store, tmp_path: Path, cwd: Path) -> None:
    started = time.time()
    executed = run_notebook("01_bulk_ingest.ipynb", tmp_path, cwd=cwd, smoke=True)
    assert PLOT.stat().st_mtime >= started and PLOT.stat().st_size > 10_000
    assert not (NOTEBOOKS / "plots").exists()  # a relative plots_dir is the project root's, not the kernel's
    outputs = "".join(
        "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
        for cell in json.loads(executed.read_text())["cells"] if cell["cell_type"] == "code"
        for out in cell.get("outputs", []))
    assert "ingest: 18 files" in outputs and "18 stored, 0 skipped, 0 failed" in outputs
    assert "re-ingest: 18 files" in outputs and "0 stored, 18 skipped, 0 failed" in outputs
    assert "dedup ratio" in outputs
    files = {row.id for row in empty_store.execute("SELECT id FROM casstor_meta.versions")}
    assert len(files) == 18 and all(f.startswith("notebook/") for f in files)
