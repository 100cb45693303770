"""Notebook 03's node-count conclusions are computed from the measured rows, and bad plans are refused."""

from __future__ import annotations

import pandas as pd
import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.lab.node_scaling import ScalingPlan, cluster_label, conclusions, conclusions_markdown, run_node_scaling


def _rows(rates: dict[int, float], p95: dict[int, float]) -> pd.DataFrame:
    return pd.DataFrame([{"nodes": n, "rf": min(3, n), "cluster": cluster_label(n), "threads": 16,
                          "table": "existing_blocks", "ops": "exists_one", "experiment": "existing_blocks, exists_one",
                          "op_rate": rates[n], "p95_ms": p95[n]} for n in rates])


def test_conclusions_compare_the_largest_cluster_with_one_node() -> None:
    rows = _rows({1: 4000.0, 2: 3000.0, 3: 2500.0}, {1: 2.0, 2: 3.5, 3: 4.25})
    [line] = conclusions(rows)
    assert line == ("**existing_blocks, exists_one.** At 16 threads, 3 nodes (RF 3) ran 2,500 op/s vs 4,000 op/s "
                    "for 1 node (RF 1) (0.62x); p95 4.2 ms vs 2.0 ms. Throughput fell from 1 node (RF 1) to "
                    "3 nodes (RF 3).")
    assert "rose" in conclusions(_rows({1: 1000.0, 3: 1500.0}, {1: 1.0, 3: 1.0}))[0]
    assert "this machine's 2 cores" in conclusions_markdown(rows, 2)


@pytest.mark.parametrize("counts", [(), (2, 1), (1, 1, 2), (0, 1)])
def test_node_counts_must_be_ascending_and_positive(counts: tuple[int, ...], tmp_path) -> None:
    plan = ScalingPlan(node_counts=counts, profiles=("existing_blocks.yaml",), keys=10, reads=10)
    with pytest.raises(CasstorError, match="expected ascending positive counts"):
        run_node_scaling(plan, tmp_path)  # refused before any node starts
