"""Reading ``bench.serve``'s results: one table, the req/s and p99 plots, the goals of issue 16.

Computed from a results dict of :func:`bench.serve.run_sweep` (or its JSON
file), never from typed-in figures, so the CLI, the JSON and notebook 05 say
the same thing.

Example::

    >>> results = json.loads(Path("bench/results/serve.json").read_text())    # doctest: +SKIP
    >>> sweep_frame(results)                                                  # doctest: +SKIP
    >>> plot_sweep(results, Path("plots/serve_sweep.png"))                    # doctest: +SKIP

Failures: a results dict missing a figure raises ``KeyError`` naming it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# Issue 16: at 64 KB, PUT and GET over HTTP at least half the raw driver's rate.
GOAL_SIZE = 64 * 1024
GOAL_RATIO = 0.5
# A point's runs and their reference: the GETs run twice, the server's content cache empty, then filled.
OPERATIONS = {"put": ("PUT", "raw_put"), "get": ("GET", "raw_get"), "get_again": ("GET again", "raw_get")}


def size_label(nbytes: int) -> str:
    """4 KiB, 64 KiB, 1 MiB: a body size for a table or an axis."""
    return f"{nbytes // (1024 * 1024)} MiB" if nbytes >= 1024 * 1024 else f"{nbytes // 1024} KiB"


def sweep_frame(results: dict) -> pd.DataFrame:
    """One row per (size, connections, operation): HTTP and raw rates, latency, ratio, CPU ms per MB."""
    rows = []
    for point in results["rows"]:
        for op, (label, reference) in OPERATIONS.items():
            http, raw = point[op], point.get(reference, {})
            rows.append({"size": point["size"], "connections": point["connections"], "op": label,
                         "req_per_s": http["per_s"], "mb_per_s": http["mb_per_s"], "p50_ms": http["p50_ms"],
                         "p99_ms": http["p99_ms"], "raw_req_per_s": raw.get("per_s"),
                         "http_vs_raw": point.get(f"{op}_ratio"),
                         "server_cpu_ms_per_mb": http.get("server_ms_per_mb"),
                         "node_cpu_ms_per_mb": http.get("node_ms_per_mb"),
                         "raw_node_cpu_ms_per_mb": raw.get("node_ms_per_mb"),
                         "cache_hits": http.get("cache_hits"), "cache_misses": http.get("cache_misses")})
    return pd.DataFrame(rows)


def goals(results: dict) -> list[str]:
    """The issue's goals, each measured ratio against 0.5 (at 64 KB), and the dedup check."""
    lines = []
    for point in results["rows"]:
        if point["size"] == GOAL_SIZE and "put_ratio" in point:
            for op, (label, _) in OPERATIONS.items():
                ratio = point[f"{op}_ratio"]
                lines.append(f"64 KB {label} at {point['connections']} connections: HTTP/raw {ratio:.3f} "
                             f"(goal >= {GOAL_RATIO}: {'met' if ratio >= GOAL_RATIO else 'not met'})")
    dedup = results["dedup"]
    lines.append(f"dedup: the second PUT of the same {dedup['bytes']} bytes uploaded {dedup['second_new_bytes']} "
                 f"new bytes (goal 0: {'met' if dedup['second_new_bytes'] == 0 else 'not met'})")
    return lines


def plot_sweep(results: dict, path: Path) -> Path:
    """req/s and p99 latency against body size, one line per operation and connection count (raw dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = sweep_frame(results)
    fig, (rates, latency) = plt.subplots(1, 2, figsize=(13, 5))
    for (op, connections), part in frame.groupby(["op", "connections"]):
        part = part.sort_values("size")
        line, = rates.plot(part["size"], part["req_per_s"], marker="o", label=f"{op} HTTP, {connections} conn.")
        if part["raw_req_per_s"].notna().all():
            rates.plot(part["size"], part["raw_req_per_s"], linestyle="--", color=line.get_color(),
                       label=f"{op} raw driver, {connections} in flight")
        latency.plot(part["size"], part["p99_ms"], marker="o", label=f"{op}, {connections} conn.")
    sizes = sorted(frame["size"].unique())
    for axis, label in ((rates, "requests/s"), (latency, "p99 latency (ms)")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(sizes, [size_label(int(size)) for size in sizes])
        axis.set_yscale("log")
        axis.set_xlabel("body size (bytes)")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    rates.set_title("casstor serve under wrk vs the raw driver")
    latency.set_title("p99 latency")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
