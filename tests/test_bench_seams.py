"""python -m bench.seams --quick: a Complete that cuts its seams again against one that keeps the parts' cuts.

Marked ``slow``: it starts a node of its own and stores 4 x 40 MiB of parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .support import run_bench

pytestmark = pytest.mark.slow


def test_quick_seams(tmp_path: Path) -> None:
    output = tmp_path / "seams.json"
    run = run_bench("seams", "--quick", "--output", str(output))
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads(output.read_text())
    (measured,) = results["rounds"]
    # Cut again, the object re-uploaded in other parts has no block the first lacks; kept, its seams' blocks differ.
    assert measured["cut"]["again_blocks"] == 0 < measured["kept"]["again_blocks"]
    assert measured["cut"]["file_hash"] != measured["kept"]["file_hash"]
    assert results["cut_of_kept"] == results["median"]["cut"]["seconds"] / results["median"]["kept"]["seconds"] > 0
    assert "cut / kept:" in run.stdout


def test_bad_arguments_are_one_line() -> None:
    run = run_bench("seams", "--part-mb", "8", "--other-part-mb", "8", timeout=120)
    assert run.returncode != 0 and len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
