"""notebooks/05_gateway_throughput.ipynb runs headless in smoke mode: the wrk sweep, the plot, the goals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .support import printed_output, run_notebook


@pytest.mark.slow  # about a minute (a server, three wrk runs per size, the raw reference): make test-all
def test_notebook_05_smoke(cql, tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    executed = run_notebook("05_gateway_throughput.ipynb", tmp_path, smoke=True, plots_dir=str(plots))

    assert (plots / "serve_sweep.png").stat().st_size > 10_000  # a rendered chart, not an empty file
    printed = printed_output(executed)
    figures = json.loads(next(line for line in printed.splitlines() if line.startswith("figures: "))[9:])
    assert {(f["size"], f["op"]) for f in figures} == {(size, op) for size in (4096, 65536)
                                                       for op in ("PUT", "GET", "GET again")}
    assert all(f["req_per_s"] > 0 and f["p99_ms"] > 0 and f["http_vs_raw"] > 0 for f in figures), figures
    assert "64 KB PUT at 4 connections: HTTP/raw" in printed and "uploaded 0 new bytes (goal 0: met)" in printed
