"""make experiments runs every numbered notebook 01-05 that exists, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from casstor_ops.cli.experiments import notebooks_to_run
from casstor_ops.errors import CasstorError


def test_every_notebook_01_to_05_in_order(tmp_path: Path) -> None:
    for name in ("05_serve.ipynb", "01_ingest.ipynb", "03_study.ipynb", "06_later.ipynb", "00_draft.ipynb",
                 "02_report.ipynb.bak", "notes.ipynb"):
        (tmp_path / name).touch()
    assert [p.name for p in notebooks_to_run(folder=tmp_path)] == ["01_ingest.ipynb", "03_study.ipynb",
                                                                  "05_serve.ipynb"]
    assert [p.name for p in notebooks_to_run(["05", "01"], tmp_path)] == ["01_ingest.ipynb", "05_serve.ipynb"]
    with pytest.raises(CasstorError, match=r"--only 04: no such notebook \(known: 01_ingest.ipynb, "):
        notebooks_to_run(["04"], tmp_path)


def test_the_project_notebooks_are_all_run() -> None:
    names = [p.name for p in notebooks_to_run()]
    assert names[:4] == ["01_bulk_ingest.ipynb", "02_dedup_report.ipynb", "03_exists_query_study.ipynb",
                         "04_store_restore_throughput.ipynb"]
