"""The exists-query study of notebook 03: its plan, its run grid, its plots and its conclusions.

Notebook cells call these functions, so the notebook holds the story and
this module the logic. Every conclusion is a sentence computed from the
measured DataFrames (:func:`compare`), never a number typed in.

Example::

    >>> plan = StudyPlan.smoke()
    >>> plan.threads
    (4, 16)
    >>> grid = run_grid(["existing_blocks.yaml"], ["exists_one"], plan, "plots/stress")  # doctest: +SKIP
    >>> plot_vs_threads(grid, "ops", "exists_one", "plots/03_queries.png")               # doctest: +SKIP
    >>> compare(grid, "ops", "exists_five", "exists_one", threads=16)                     # doctest: +SKIP
    'At 16 threads, exists_five ran 2,410 op/s vs 2,205 op/s for exists_one (1.09x); p95 4.1 ms vs 4.6 ms.'

Functions raise :class:`~casstor_ops.errors.CasstorError` when asked about
a series or thread count that was not measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from cassandra.cluster import Session

from casstor_ops.errors import CasstorError
from casstor_ops.lab.stress import PROFILES, run_stress, set_row_cache


@dataclass(frozen=True)
class StudyPlan:
    """Sizes of one run of the study: full for conclusions, smoke for CI (a few minutes on 2 cores)."""

    keys: int                     # blocks loaded into each table (seeds 1..keys)
    reads: int                    # operations per cassandra-stress read run
    threads: tuple[int, ...]      # client thread counts of every read experiment
    table_profiles: tuple[str, ...]   # tables loaded and compared with exists_one
    query_profiles: tuple[str, ...]   # tables every exists query runs on
    cache_profiles: tuple[str, ...]   # tables of the row cache off/on experiment
    harness_checks: int           # blocks checked per harness measurement
    load_threads: int = 8

    @classmethod
    def full(cls) -> "StudyPlan":
        return cls(keys=20000, reads=20000, threads=(4, 8, 16, 32), table_profiles=tuple(PROFILES),
                   query_profiles=("existing_blocks.yaml", "existing_blocks_key_only.yaml", "blocks.yaml"),
                   cache_profiles=("existing_blocks.yaml", "blocks.yaml"), harness_checks=20000)

    @classmethod
    def smoke(cls) -> "StudyPlan":
        return cls(keys=2000, reads=2000, threads=(4, 16), table_profiles=("existing_blocks.yaml", "blocks.yaml"),
                   query_profiles=("existing_blocks.yaml",),
                   cache_profiles=("existing_blocks.yaml",), harness_checks=2000)


def run_grid(profiles: Sequence[str], queries: Sequence[str], plan: StudyPlan, results_dir: Path | str,
             prefix: str = "") -> pd.DataFrame:
    """Every query on every profile at every plan thread count; the whole-run rows, concatenated."""
    totals = [run_stress(profile, query, population=plan.keys, n=plan.reads, threads=plan.threads,
                         results_dir=results_dir, name=f"{prefix}{Path(profile).stem}-{query}").totals
              for profile in profiles for query in queries]
    return pd.concat(totals, ignore_index=True)


def run_row_cache(session: Session, profiles: Sequence[str], plan: StudyPlan,
                  results_dir: Path | str) -> pd.DataFrame:
    """``exists_one`` with each table's row cache off, then on; the cache is off again afterwards.

    Rows carry a ``row_cache`` column: ``"<table>, row cache off|on"``.
    """
    runs = []
    for profile in profiles:
        table = PROFILES[Path(profile).name]
        try:
            for enabled in (False, True):
                set_row_cache(session, table, enabled)
                label = "on" if enabled else "off"
                runs.append(run_grid([profile], ["exists_one"], plan, results_dir, prefix=f"rowcache-{label}-")
                            .assign(row_cache=f"{table}, row cache {label}"))
        finally:
            set_row_cache(session, table, False)
    return pd.concat(runs, ignore_index=True)


def plot_vs_threads(df: pd.DataFrame, series: str, title: str, path: Path | str, *, x: str = "threads",
                    rate: str = "op_rate", rate_label: str = "operations per second (op/s)",
                    x_label: str = "client threads") -> plt.Figure:
    """Two panels, rate and p95 latency against ``x``, one line per value of ``series``; saved as PNG."""
    if df.empty:
        raise CasstorError(f"nothing measured to plot for {title!r}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, group in df.sort_values(x).groupby(series, sort=False):
        left.plot(group[x], group[rate], marker="o", label=str(name))
        right.plot(group[x], group["p95_ms"], marker="o", label=str(name))
    for ax, ylabel in ((left, rate_label), (right, "p95 latency (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(df[x].unique()), [str(v) for v in sorted(df[x].unique())])
        ax.set_xlabel(x_label)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(title=series)
    left.set_title("throughput")
    right.set_title("95th percentile latency")
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return fig


def reference_threads(df: pd.DataFrame, preferred: int = 16, x: str = "threads") -> int:
    """``preferred`` when measured, else the largest measured value of ``x``."""
    values = set(int(v) for v in df[x].unique())
    if not values:
        raise CasstorError("nothing measured")
    return preferred if preferred in values else max(values)


def _row(df: pd.DataFrame, series: str, name: str, x: str, at: int) -> pd.Series:
    rows = df[(df[series] == name) & (df[x] == at)]
    if rows.empty:
        raise CasstorError(f"no measurement of {series}={name!r} at {x}={at}")
    return rows.iloc[0]


def ratio(df: pd.DataFrame, series: str, a: str, b: str, *, threads: int, rate: str = "op_rate",
          x: str = "threads") -> float:
    """``rate`` of ``a`` over ``rate`` of ``b`` at one thread count."""
    return float(_row(df, series, a, x, threads)[rate] / _row(df, series, b, x, threads)[rate])


def compare(df: pd.DataFrame, series: str, a: str, b: str, *, threads: int, rate: str = "op_rate",
            unit: str = "op/s", x: str = "threads", x_name: str = "threads") -> str:
    """One sentence comparing two series at one thread count, from the measured rows."""
    ra, rb = _row(df, series, a, x, threads), _row(df, series, b, x, threads)
    return (f"At {threads} {x_name}, {a} ran {ra[rate]:,.0f} {unit} vs {rb[rate]:,.0f} {unit} for {b} "
            f"({ra[rate] / rb[rate]:.2f}x); p95 {ra.p95_ms:.1f} ms vs {rb.p95_ms:.1f} ms.")


def rows_per_query(df: pd.DataFrame, ops: str) -> float:
    """Mean rows returned per query of ``ops`` (row rate / op rate) over its runs."""
    rows = df[df.ops == ops]
    if rows.empty:
        raise CasstorError(f"no {ops} runs measured")
    return float((rows.row_rate / rows.op_rate).mean())
