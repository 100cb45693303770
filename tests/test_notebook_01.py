"""notebooks/01_bulk_ingest.ipynb runs headless (papermill) on a generated sample tree."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .support import run_notebook

PLOT = Path(__file__).resolve().parent.parent / "plots" / "01_bulk_ingest_throughput.png"


def test_notebook_ingests_sample_and_writes_plot(empty_store, tmp_path: Path) -> None:
    started = time.time()
    executed = run_notebook("01_bulk_ingest.ipynb", tmp_path, source="", prefix="nb01/", parallelism=4,
                            master="local[2]")
    assert PLOT.stat().st_mtime >= started and PLOT.stat().st_size > 10_000
    outputs = "".join(
        "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
        for cell in json.loads(executed.read_text())["cells"] if cell["cell_type"] == "code"
        for out in cell.get("outputs", []))
    assert "ingest: 18 files" in outputs and "18 stored, 0 skipped, 0 failed" in outputs
    assert "re-ingest: 18 files" in outputs and "0 stored, 18 skipped, 0 failed" in outputs
    assert "dedup ratio" in outputs
    files = {row.id for row in empty_store.execute("SELECT id FROM casstor_meta.files")}
    assert len(files) == 18 and all(f.startswith("nb01/") for f in files)
