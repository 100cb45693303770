"""notebooks/03_exists_query_study.ipynb runs headless with its defaults in smoke mode, from the project root
(the reported failure: a relative results path handed to cassandra-stress) and from notebooks/; it draws every
plot under the project's plots/, concludes from the data, and stops the nodes of its node-count section.

Marked ``cluster``: the node-count section starts local clusters of up to three nodes (about ten minutes per run
on 2 shared cores); ``make test-all`` runs both.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from .support import NOTEBOOKS, ROOT, run_notebook

pytestmark = pytest.mark.cluster

PLOTS = ROOT / "plots"
FIGURES = ["03_tables.png", "03_queries.png", "03_row_cache.png", "03_harness.png", "03_nodes.png"]


def _outputs(notebook: Path, kind: str) -> str:
    nb = nbformat.read(notebook, as_version=4)
    return "".join(out.get("data", {}).get("text/markdown", "") if kind == "markdown" else out.get("text", "")
                   for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", []))


def _scratch_node_alive(pid: int) -> bool:
    try:
        return b"casstor-scratch-" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.timeout(3600)  # 10 min on a quiet machine, 25+ under the load of parallel suites: never cut short, since
# a kernel shut down mid-cell is SIGKILLed and cannot stop the nodes of its node-count section
@pytest.mark.parametrize("cwd", [ROOT, NOTEBOOKS], ids=["project-root", "notebooks-dir"])
def test_notebook_03_smoke(local_cluster, tmp_path: Path, cwd: Path) -> None:
    started = time.time()
    executed = run_notebook("03_exists_query_study.ipynb", tmp_path, cwd=cwd, smoke=True)

    for name in FIGURES:
        figure = PLOTS / name
        assert figure.stat().st_mtime >= started and figure.stat().st_size > 10_000, name  # drawn by this run
    assert not (NOTEBOOKS / "plots").exists()  # a relative plots_dir is the project root's
    summary = pd.read_csv(PLOTS / "03_stress_summary.csv")
    reads = summary[summary.ops != "insert"]
    assert {"exists_one", "exists_five", "exists_count"} <= set(reads.ops)
    assert set(reads.threads) == {4, 16}
    assert (summary.op_rate > 0).all() and (summary.p95_ms > 0).all() and (summary.errors == 0).all()
    assert set(summary.row_cache.dropna()) == {"existing_blocks, row cache off", "existing_blocks, row cache on"}
    harness = pd.read_csv(PLOTS / "03_harness.csv")
    assert (harness.blocks_per_s > 0).all() and (harness.blocks_found == harness.blocks_checked).all()
    assert list((PLOTS / "stress").glob("load-*/t8.log"))  # raw cassandra-stress logs kept beside the results

    conclusions = _outputs(executed, "markdown")
    ratio = harness.set_index(["query", "concurrency"]).blocks_per_s
    expected = ratio["exists_five", 16] / ratio["exists_one", 16]
    assert f"IN(5) checks {expected:.2f}x" in conclusions  # computed from the measurements, not typed in
    assert "rows per query" in conclusions and "row cache on" in conclusions

    nodes = pd.read_csv(PLOTS / "03_nodes.csv")
    assert sorted(set(nodes.nodes)) == [1, 2, 3] and (nodes.rf == nodes.nodes.clip(upper=3)).all()
    assert set(nodes.experiment) == {"existing_blocks, insert", "existing_blocks, exists_one"}
    assert (nodes.op_rate > 0).all() and (nodes.p95_ms > 0).all() and (nodes.errors == 0).all()
    for experiment, rows in nodes.groupby("experiment"):
        rate = rows.set_index("nodes").op_rate
        trend = "rose" if rate[3] >= rate[1] else "fell"
        assert f"**{experiment}.** At 16 threads, 3 nodes (RF 3) ran {rate[3]:,.0f} op/s vs {rate[1]:,.0f} op/s " \
               f"for 1 node (RF 1) ({rate[3] / rate[1]:.2f}x)" in conclusions
        assert f"Throughput {trend} from 1 node (RF 1) to 3 nodes (RF 3)." in conclusions

    # A joining node that missed the seed's gossip is started once more (the launcher's _start_joining): count nodes.
    started = re.findall(r"node(\d+) \(\S+\) starting, pid (\d+)", _outputs(executed, "stream"))
    assert {node for node, _ in started} == {"1", "2", "3"}
    assert not [pid for _, pid in started if _scratch_node_alive(int(pid))]
