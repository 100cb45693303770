"""Notebook 03's node-count experiment: the same cassandra-stress profiles on 1, 2 and 3 local nodes.

:func:`run_node_scaling` starts a cluster of its own
(:mod:`casstor_ops.lab.scratch_cluster`: own home, free ports, never the
user's node), grows it one node at a time, and at each node count N
recreates the stress keyspace with RF = min(3, N), loads every profile
(``insert``), flushes, and reads it back (``exists_one``) at one thread
count, at the store's consistency level. Every node it started is stopped
when it returns or raises. :func:`plot_vs_nodes` draws op/s and p95
against nodes; :func:`conclusions` turns the rows into sentences.

On one machine every node shares the same cores, so more nodes cannot
mean more op/s here: the experiment shows what replication and
coordination cost per operation, and that the profiles run unchanged on
a growing cluster.

Example::

    >>> rows = run_node_scaling(ScalingPlan.smoke(), "plots/stress")   # doctest: +SKIP
    >>> plot_vs_nodes(rows, "plots/03_nodes.png")                     # doctest: +SKIP
    >>> conclusions(rows)[0]                                          # doctest: +SKIP
    '**existing_blocks, insert.** At 16 threads, 3 nodes (RF 3) ran 120 op/s vs 85 op/s for 1 node (RF 1) (1.41x); ...'

Failures: a node that does not start, or a cassandra-stress run that
fails, raises :class:`~casstor_ops.errors.CasstorError` (one line) after
the experiment's nodes are stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from casstor_ops.cluster.connection import connect
from casstor_ops.errors import CasstorError
from casstor_ops.lab.scratch_cluster import ScratchCluster, scratch_cluster
from casstor_ops.lab.stress import create_stress_keyspace, flush_local, run_stress
from casstor_ops.lab.stress_report import compare, plot_vs_threads

MAX_RF = 3


@dataclass(frozen=True)
class ScalingPlan:
    """Sizes of one node-count run: smoke keeps it to a few minutes on 2 cores."""

    node_counts: tuple[int, ...]  # ascending: the cluster grows from one count to the next
    profiles: tuple[str, ...]     # each loaded (insert) and read (exists_one) at every node count
    keys: int
    reads: int
    threads: int = 16
    heap_mb: int = 512

    @classmethod
    def full(cls) -> "ScalingPlan":
        return cls(node_counts=(1, 2, 3), profiles=("existing_blocks.yaml", "existing_blocks_key_only.yaml",
                                                    "blocks.yaml"), keys=20000, reads=20000)

    @classmethod
    def smoke(cls) -> "ScalingPlan":
        return cls(node_counts=(1, 2, 3), profiles=("existing_blocks.yaml",), keys=2000, reads=2000)


def replication_factor(nodes: int) -> int:
    return min(MAX_RF, nodes)


def cluster_label(nodes: int) -> str:
    return f"{nodes} node{'s' if nodes > 1 else ''} (RF {replication_factor(nodes)})"


def _measure(scratch: ScratchCluster, plan: ScalingPlan, results_dir: Path) -> pd.DataFrame:
    """Load and read every profile on the cluster as it is now; its rows, tagged with the node count."""
    nodes, endpoint = scratch.nodes, scratch.endpoint()
    session = connect(endpoint, start=False)
    try:
        create_stress_keyspace(session, replication_factor(nodes))
    finally:
        session.cluster.shutdown()
    jmx = scratch.cluster.ports.jmx_base
    runs = []
    for profile in plan.profiles:
        stem = Path(profile).stem
        runs.append(run_stress(profile, "insert", population=plan.keys, n=plan.keys, threads=[plan.threads],
                               endpoint=endpoint, jmx_port=jmx, results_dir=results_dir,
                               name=f"nodes{nodes}-load-{stem}").totals)
        flush_local(cluster=scratch.cluster)  # reads come from SSTables, as in a store that has run a while
        runs.append(run_stress(profile, "exists_one", population=plan.keys, n=plan.reads, threads=[plan.threads],
                               endpoint=endpoint, jmx_port=jmx, results_dir=results_dir,
                               name=f"nodes{nodes}-{stem}-exists_one").totals)
    rows = pd.concat(runs, ignore_index=True)
    return rows.assign(nodes=nodes, rf=replication_factor(nodes), cluster=cluster_label(nodes),
                       experiment=rows.table + ", " + rows.ops)


def run_node_scaling(plan: ScalingPlan, results_dir: Path | str, *, consistency: str = "QUORUM",
                     home: Path | str | None = None, log: Callable[[str], None] = print) -> pd.DataFrame:
    """Every profile at every node count of ``plan``, on a cluster of its own; one row per run.

    Columns: cassandra-stress's summary (``op_rate``, ``p95_ms``, ...) plus
    ``nodes``, ``rf``, ``cluster`` (``"3 nodes (RF 3)"``) and ``experiment``
    (``"<table>, <ops>"``). Raw logs go to ``results_dir/nodes<N>-*/``;
    ``home`` keeps the nodes' directories (default: a temporary one).
    """
    counts = list(plan.node_counts)
    if not counts or counts != sorted(set(counts)) or counts[0] < 1:
        raise CasstorError(f"node counts {counts}: expected ascending positive counts, e.g. (1, 2, 3)")
    results_dir = Path(results_dir).absolute()
    measured = []
    with scratch_cluster(home, heap_mb=plan.heap_mb, max_nodes=counts[-1], consistency=consistency,
                         log=log) as scratch:
        for nodes in counts:
            scratch.grow(nodes)
            measured.append(_measure(scratch, plan, results_dir))
    return pd.concat(measured, ignore_index=True)


def plot_vs_nodes(rows: pd.DataFrame, path: Path | str) -> plt.Figure:
    """op/s and p95 against the node count, one line per table and operation; saved as PNG."""
    threads = int(rows.threads.iloc[0])
    return plot_vs_threads(rows, "experiment", f"cassandra-stress on a growing local cluster "
                           f"(RF = min(3, nodes), {threads} client threads)", path, x="nodes",
                           x_label="local nodes (all on this machine's cores)")


def conclusions(rows: pd.DataFrame) -> list[str]:
    """One sentence per table and operation: the largest cluster against one node, from the rows."""
    low, high = int(rows.nodes.min()), int(rows.nodes.max())
    lines = []
    for experiment, group in rows.groupby("experiment", sort=False):
        threads = int(group.threads.iloc[0])
        sentence = compare(group, "cluster", cluster_label(high), cluster_label(low), threads=threads)
        by_nodes = group.set_index("nodes")
        trend = "rose" if by_nodes.op_rate[high] >= by_nodes.op_rate[low] else "fell"
        lines.append(f"**{experiment}.** {sentence} Throughput {trend} from {cluster_label(low)} to "
                     f"{cluster_label(high)}.")
    return lines


def conclusions_markdown(rows: pd.DataFrame, cores: int | None) -> str:
    """The conclusions as a Markdown list, with what the node count means on this machine."""
    shared = (f"All nodes ran on this machine's {cores} cores, so these figures show the cost of "
              f"replication and coordination per operation, not the speed-up of nodes on their own hardware.")
    return "\n".join(f"- {line}" for line in [*conclusions(rows), shared])


def summary_columns(rows: pd.DataFrame) -> pd.DataFrame:
    """The columns the notebook shows."""
    return rows[["nodes", "rf", "table", "ops", "threads", "op_rate", "median_ms", "p95_ms"]]
