"""notebooks/02_dedup_report.ipynb runs with its default parameters as Jupyter Lab runs it (from ``notebooks/``)
and as ``make experiments`` does (from the project root), and shows the report's figures and tables."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from casstor_ops.cli.experiments import run_notebook as run_experiment
from casstor_ops.ops.dedup_output import SECTIONS
from casstor_ops.ops.dedup_plots import FIGURES
from casstor_ops.store.api import Store

from .support import NOTEBOOKS, ROOT, run_notebook

NOTEBOOK = "02_dedup_report.ipynb"


def _small_store(session, tmp_path: Path) -> dict:
    shared = os.urandom(300_000)
    with Store(session) as store:
        for i in range(4):
            (tmp_path / f"f{i}").write_bytes(shared + os.urandom(50_000))
            store.put(tmp_path / f"f{i}", f"nb02/{i % 2}/f{i}")
        return store.stats().as_dict()


def _check_written(out: Path, core: dict) -> None:
    for name in FIGURES:
        assert (out / f"{name}.png").stat().st_size > 5_000, name
    assert (out / "dedup_report.html").read_text().count("data:image/png;base64,") == len(FIGURES)
    totals = json.loads((out / "dedup_stats.json").read_text())["totals"]
    assert {k: totals[k] for k in core} == core and totals["files"] == 4


def test_from_notebooks_dir_writes_to_the_project_root_and_shows_every_figure_and_table(
        empty_store, tmp_path: Path) -> None:
    core = _small_store(empty_store, tmp_path)
    # Defaults, but for a plots_dir that is relative (as the default "plots") and lands in tmp_path.
    relative = os.path.relpath(tmp_path / "plots", ROOT)
    executed = run_notebook(NOTEBOOK, tmp_path, cwd=NOTEBOOKS, plots_dir=relative, smoke=True)
    _check_written(tmp_path / "plots", core)
    assert not (NOTEBOOKS / relative).resolve().exists()  # not resolved against the working directory

    outputs = [out for cell in json.loads(executed.read_text())["cells"] if cell["cell_type"] == "code"
               for out in cell.get("outputs", [])]
    text = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) +
                   "".join(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    assert "casstor dedup report" in text and "nb02" in text and "exclusive stored bytes" in text
    assert all(section.title in text for section in SECTIONS)
    assert sum("image/png" in o.get("data", {}) for o in outputs) == len(FIGURES)
    assert sum("text/html" in o.get("data", {}) for o in outputs) == 1 + sum(len(s.tables) for s in SECTIONS)


@pytest.mark.slow
def test_runs_as_make_experiments_runs_it(empty_store, tmp_path: Path) -> None:
    core = _small_store(empty_store, tmp_path)
    # The runner's own call: the project root as working directory, smoke=True and an absolute plots_dir.
    run_experiment(NOTEBOOKS / NOTEBOOK, tmp_path / "plots", smoke=True)
    _check_written(tmp_path / "plots", core)
