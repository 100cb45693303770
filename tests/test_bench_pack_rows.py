"""python -m bench.pack_rows --quick on the session's test node: every shape written and measured, the scratch
keyspace dropped."""

from __future__ import annotations

import json
from pathlib import Path

from bench.pack_rows import KS, SHAPES

from .support import run_bench


def test_quick_pack_rows_measures_each_shape_and_drops_its_keyspace(cql, tmp_path: Path) -> None:
    output = tmp_path / "pack_rows.json"
    run = run_bench("pack_rows", "--quick", "--output", str(output), timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads(output.read_text())
    for shape in SHAPES:
        [measured] = results["runs"][shape]  # --quick: one round, no warm-up
        assert measured["per_s"] > 0 and measured["node_ms"] > 0 and measured["client_ms"] > 0, (shape, measured)
    assert results["mutations_per_body"] == {"raw": 1.0, "rows": 3.25, "joined": 2.25, "packs": 2.5}  # groups of 4
    assert "packs_per_s_of_rows" in run.stdout and "packs_node_ms_of_rows" in results["ratios"]
    assert not cql.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
                           (KS,)).all()
