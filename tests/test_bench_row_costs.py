"""python -m bench.row_costs --quick measures bytes per row of each table on a node of its own.

Marked ``slow``: it starts a node, writes 5,000 blocks with their rows and waits for compactions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .support import run_bench

pytestmark = pytest.mark.slow


def test_quick_row_costs(tmp_path: Path) -> None:
    output = tmp_path / "row_costs.json"
    run = run_bench("row_costs", "--quick", "--output", str(output))
    assert run.returncode == 0, run.stdout + run.stderr
    tables = json.loads(output.read_text())["tables"]
    assert {name: t["rows"] for name, t in tables.items()} == {"blocks": 5000, "existing_blocks": 5000,
                                                              "file_blocks": 4000, "versions": 500,
                                                              "dir_entries": 501}
    # Every row holds at least its 32-byte key; a block row its 256 bytes of random content too.
    assert tables["blocks"]["disk_bytes_per_row"] > 256 + 32 and tables["blocks"]["overhead_bytes_per_row"] > 0
    assert all(t["disk_bytes_per_row"] > 32 and t["bloom_bytes_per_row"] > 0 for t in tables.values())
    assert "a blocks row costs its stored content plus" in run.stdout
