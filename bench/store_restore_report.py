"""Reading the store/restore benchmark's results: ratios against goals, tables, plots, conclusions.

Everything here is computed from a results dict of
:func:`bench.store_restore.run_benchmark` (or its JSON file), never from
hard-coded figures, so the CLI, the JSON and notebook 04 say the same thing.

Example::

    >>> results = json.loads(Path("bench/results/store_restore.json").read_text())  # doctest: +SKIP
    >>> print("\\n".join(conclusions(results)))                                     # doctest: +SKIP
    >>> plot_throughput(results, Path("plots/store_restore_throughput.png"))         # doctest: +SKIP

Failures: a results dict missing a figure raises ``KeyError`` naming it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.common import MB

MBPS_LABEL = "throughput (MB/s, 1 MB = 10^6 bytes)"

# name: (casstor figure, reference figure, goal); each is measured per mode (1 process, N processes).
RATIOS = {
    "store_new_vs_raw_write": ("store_new", "raw_write_best", 0.9),
    "store_dup_vs_chunk_hash": ("store_dup", "chunk_hash_one_core", 0.7),
    "restore_vs_raw_read": ("restore", "raw_read_best", 0.9),
    "store_vs_restic_backup": ("store_new", "restic_backup", 1.0),
    "restore_vs_restic_restore": ("restore", "restic_restore", 1.0),
}

# Bars of the throughput chart: operation -> {series: figure}.
_CHART = {
    "store new data": {"raw driver write (best concurrency)": "raw_write_best", "restic": "restic_backup"},
    "store duplicate data": {"one-core chunk + hash": "chunk_hash_one_core"},
    "restore": {"raw driver read (best concurrency)": "raw_read_best", "restic": "restic_restore"},
}
_CASSTOR_FIGURE = {"store new data": "store_new", "store duplicate data": "store_dup", "restore": "restore"}


def compute_ratios(mbps: dict[str, float], procs: int, cpu: dict[str, dict] | None = None) -> dict[str, dict]:
    """Every ratio whose two figures were measured, per mode, with its goal and whether it is met.

    With the CPU cost of both figures (client + node ms/MB, :mod:`bench.cpu`),
    ``cpu_bound`` is the ratio the CPU alone allows when client and nodes
    share the cores: reference CPU per MB / casstor CPU per MB (one process
    only: the CPU of N processes includes their start-up).
    """
    out = {}
    for name, (figure, reference, goal) in RATIOS.items():
        for suffix, mode in (("", "1 process"), ("_procs", f"{procs} processes")):
            if figure + suffix in mbps and reference in mbps:
                value = mbps[figure + suffix] / mbps[reference]
                out[name + suffix] = dict(figure=figure + suffix, reference=reference, mode=mode,
                                          value=value, goal=goal, met=value >= goal,
                                          cpu_bound=None if suffix else _cpu_bound(cpu or {}, figure, reference))
    return out


def _cpu_ms_per_mb(cost: dict | None) -> float | None:
    if not cost or cost.get("node_ms_per_mb") is None:
        return None
    return cost["client_ms_per_mb"] + cost["node_ms_per_mb"]


def _cpu_bound(cpu: dict[str, dict], figure: str, reference: str) -> float | None:
    ours, theirs = _cpu_ms_per_mb(cpu.get(figure)), _cpu_ms_per_mb(cpu.get(reference))
    return theirs / ours if ours and theirs else None


def goal_summary(results: dict) -> list[str]:
    """One line per goal: its value in each mode (and the CPU-bound ratio, if known), and which mode meets it."""
    lines = []
    for name, (_, _, goal) in RATIOS.items():
        modes = [results["ratios"][k] for k in (name, name + "_procs") if k in results["ratios"]]
        if not modes:
            continue
        met = [m["mode"] for m in modes if m["met"]]
        values = ", ".join(f"{m['value']:.2f} ({m['mode']}"
                           + (f"; CPU allows {m['cpu_bound']:.2f}" if m.get("cpu_bound") else "") + ")"
                           for m in modes)
        verdict = f"met with {' and '.join(met)}" if met else "not met"
        lines.append(f"{name:<26} goal >= {goal:.1f}: {values}: {verdict}")
    return lines


def cpu_lines(results: dict) -> list[str]:
    """CPU milliseconds per MB of each figure: the client (this process and its children) and the nodes."""
    lines = ["CPU per MB of the best measurement (ms/MB; client = bench process + children, including the "
             "start-up of _procs workers and restic; node = local nodes):"]
    for name, cost in results.get("cpu_ms_per_mb", {}).items():
        node = cost["node_ms_per_mb"]
        lines.append(f"  {name:<26} client {cost['client_ms_per_mb']:6.2f}   node "
                     + ("   n/a" if node is None else f"{node:6.2f}"))
    return lines


def _dedup_lines(d: dict) -> list[str]:
    lines = [f"dedup: corpus {d['logical_bytes'] / MB:.1f} MB, casstor stored {d['casstor_stored_bytes'] / MB:.1f} MB "
             f"of blocks (x{d['casstor_dedup_ratio']:.2f})"]
    if "restic_raw_data_bytes" in d:
        lines.append(f"       restic {d['restic_version']} stored {d['restic_raw_data_bytes'] / MB:.1f} MB of blobs "
                     f"(x{d['restic_dedup_ratio']:.2f}, {d['restic_repo_bytes'] / MB:.1f} MB on disk); "
                     f"casstor/restic stored bytes = {d['casstor_vs_restic_stored']:.3f}")
    return lines


def format_report(results: dict) -> str:
    """The printed summary: throughput, ratios with goals, dedup."""
    out = ["", f"{MBPS_LABEL}:"]
    out += [f"  {name:<26} {value:9.1f}" for name, value in results["mbps"].items()]
    out += cpu_lines(results)
    out += ["ratios (casstor / reference, same run):"] + [f"  {line}" for line in goal_summary(results)]
    return "\n".join(out + _dedup_lines(results["dedup"]))


def ratios_frame(results: dict) -> pd.DataFrame:
    """One row per ratio: figure, reference, mode, value, goal, met."""
    return pd.DataFrame([{"ratio": k, **v} for k, v in results["ratios"].items()]).set_index("ratio")


def throughput_frame(results: dict) -> pd.DataFrame:
    """MB/s, operations as rows and casstor modes / references as columns (NaN: not measured)."""
    mbps, procs = results["mbps"], results["run"]["procs"]
    rows = {}
    for operation, references in _CHART.items():
        figure = _CASSTOR_FIGURE[operation]
        row = {"casstor, 1 process": mbps.get(figure)}
        if procs > 1:
            row[f"casstor, {procs} processes"] = mbps.get(figure + "_procs")
        row.update({series: mbps.get(name) for series, name in references.items()})
        rows[operation] = row
    return pd.DataFrame.from_dict(rows, orient="index").astype(float).dropna(axis=1, how="all")


def plot_throughput(results: dict, path: Path) -> Path:
    """Grouped bars: each casstor operation beside its references; saved as PNG."""
    import matplotlib.pyplot as plt

    frame = throughput_frame(results)
    fig, ax = plt.subplots(figsize=(10, 5.5))
    frame.plot.bar(ax=ax, rot=0, width=0.8)
    for bars, column in zip(ax.containers, frame.columns):
        labels = ["" if pd.isna(v) else f"{v:.0f}" for v in frame[column]]  # NaN: not measured, no bar
        ax.bar_label(bars, labels=labels, fontsize="x-small", padding=2)
    ax.set_ylim(0, frame.max().max() * 1.35)  # room for the legend above the bars
    ax.set_title("casstor store/restore throughput vs references (same run, same bytes)")
    ax.set_xlabel("operation")
    ax.set_ylabel(MBPS_LABEL)
    ax.legend(title="measured", fontsize="small", ncol=2, loc="upper center")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def plot_raw_sweep(results: dict, path: Path) -> Path:
    """Raw driver MB/s against requests in flight, with casstor's one-process store/restore as lines."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, sweep in results["raw_sweeps"].items():
        ax.plot([int(c) for c in sweep], list(sweep.values()), marker="o", label=f"raw driver {name}")
    concurrencies = [int(c) for c in results["raw_sweeps"]["write"]]
    for figure, label, style in (("store_new", "casstor store (new data, 1 process)", "--"),
                                 ("restore", "casstor restore (1 process)", ":")):
        ax.axhline(results["mbps"][figure], linestyle=style, color="grey", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(concurrencies, [str(c) for c in concurrencies])
    ax.set_ylim(bottom=0)
    ax.set_title("raw driver throughput by concurrency (prepared statements, execute_async)")
    ax.set_xlabel("requests in flight (concurrency)")
    ax.set_ylabel(MBPS_LABEL)
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_dedup(results: dict, path: Path) -> Path:
    """Bytes of the corpus and bytes each tool stored for it."""
    import matplotlib.pyplot as plt

    d = results["dedup"]
    bars = {"corpus (logical)": d["logical_bytes"], "casstor blocks": d["casstor_stored_bytes"]}
    if "restic_raw_data_bytes" in d:
        bars.update({"restic blobs (raw-data)": d["restic_raw_data_bytes"],
                     "restic repo on disk": d["restic_repo_bytes"]})
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, nbytes) in enumerate(bars.items()):
        ax.bar_label(ax.bar(i, nbytes / MB, color=colors[i % len(colors)], label=label), fmt="%.1f",
                     fontsize="small")
    ax.set_xticks(range(len(bars)), list(bars), rotation=10)
    ax.set_ylim(0, max(bars.values()) / MB * 1.4)
    ax.set_title("bytes stored for the same corpus (new data + every tree version)")
    ax.set_xlabel("what was counted")
    ax.set_ylabel("MB (10^6 bytes)")
    ax.legend(fontsize="small", ncol=2, loc="upper center")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def conclusions(results: dict) -> list[str]:
    """Sentences computed from the measured figures (goals, the faster mode, dedup against restic)."""
    mbps, ratios = results["mbps"], results["ratios"]
    lines = goal_summary(results)
    for figure, what in (("store_new", "store of new data"), ("store_dup", "store of duplicate data"),
                         ("restore", "restore")):
        if figure + "_procs" in mbps:
            gain = mbps[figure + "_procs"] / mbps[figure]
            lines.append(f"{what}: {mbps[figure]:.0f} MB/s in 1 process, {mbps[figure + '_procs']:.0f} MB/s in "
                         f"{results['run']['procs']} processes (x{gain:.2f})")
    if "store_dup_vs_chunk_hash" in ratios:
        lines.append(f"a duplicate store runs at {ratios['store_dup_vs_chunk_hash']['value']:.0%} of the one-core "
                     f"chunk+hash speed ({mbps['chunk_hash_one_core']:.0f} MB/s)")
    d = results["dedup"]
    if "casstor_vs_restic_stored" in d:
        diff = 1 - d["casstor_vs_restic_stored"]
        lines.append(f"for the same corpus casstor stored {abs(diff):.1%} {'fewer' if diff >= 0 else 'more'} bytes "
                     f"than restic ({d['casstor_stored_bytes'] / MB:.1f} MB vs "
                     f"{d['restic_raw_data_bytes'] / MB:.1f} MB)")
    tree = results["tree_versions"]
    if len(tree) > 1:
        edited = sum(r["new_bytes"] for r in tree[1:]) / sum(r["bytes"] for r in tree[1:])
        lines.append(f"an edited version of the tree cost {edited:.1%} of its bytes in new blocks")
    return lines
