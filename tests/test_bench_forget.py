"""python -m bench.forget --quick: forget of a prefix, IDs together against one request at a time.

Marked ``slow``: it starts a node of its own and stores 2 x 300 files three times.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .support import run_bench

pytestmark = pytest.mark.slow


def test_quick_forget(tmp_path: Path) -> None:
    output = tmp_path / "forget.json"
    run = run_bench("forget", "--quick", "--output", str(output))
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads(output.read_text())
    (measured,) = results["rounds"]
    # 270 live files lose 2 of 3 versions; 30 removed ones lose all 3 and their marker, and their entries.
    for way in ("one", "together"):
        assert (measured["prefix"][way]["ids"], measured["prefix"][way]["dropped"],
                measured["prefix"][way]["withdrawn"]) == (300, 660, 30)
        # Without a prefix: the same history, and every ID the store holds (the prefixes' live files, the warm-up's).
        assert (measured["store"][way]["dropped"], measured["store"][way]["withdrawn"]) == (660, 30)
        assert measured["store"][way]["ids"] > 300
    for scope in ("prefix", "store"):
        median = results["median_s"][scope]
        assert results["together_of_one"][scope] == median["together"] / median["one"] > 0
    assert "together / one at a time:" in run.stdout


def test_bad_arguments_are_one_line() -> None:
    run = run_bench("forget", "--ids", "0", timeout=120)
    assert run.returncode != 0 and len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
