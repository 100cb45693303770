"""Reading cassandra-stress output: its summary and per-interval rows as pandas DataFrames.

cassandra-stress (4.0) prints, for each thread count it runs (one section,
or several with ``-rate threads>=a threads<=b``)::

    Running [exists_one] with 8 threads for 2000 iteration
    type        total ops,    op/s,    pk/s,   row/s,    mean,     med,     .95, ...
    total,           1452,    1452,    1452,    1452,     3.1,     2.6,     7.2, ...
    Results:
    Op rate                   :    1,651 op/s  [exists_one: 1,651 op/s]
    Latency 95th percentile   :    7.6 ms [exists_one: 7.6 ms]
    Total errors              :          0 [exists_one: 0]
    Total operation time      : 00:00:01

:func:`parse_output` turns that into two DataFrames: ``summary`` (one row per
thread count and operation, ``op == "total"`` for the whole run) and
``intervals`` (one row per reporting interval). Rates are per second,
latencies in milliseconds, ``seconds`` is the measured duration (the last
interval's clock, finer than the ``HH:MM:SS`` total).

Example::

    >>> out = parse_output(Path("plots/stress/x/t8.log").read_text())   # doctest: +SKIP
    >>> out.summary.loc[out.summary.op == "total", ["threads", "op_rate", "p95_ms"]]  # doctest: +SKIP

Output without any ``Results:`` block (a run that died before measuring)
parses to empty DataFrames; :func:`failure_reason` finds why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

# Summary label -> column name (latencies in ms; rates per second).
_SUMMARY_LABELS = {
    "Op rate": "op_rate",
    "Partition rate": "partition_rate",
    "Row rate": "row_rate",
    "Latency mean": "mean_ms",
    "Latency median": "median_ms",
    "Latency 95th percentile": "p95_ms",
    "Latency 99th percentile": "p99_ms",
    "Latency 99.9th percentile": "p999_ms",
    "Latency max": "max_ms",
    "Total partitions": "partitions",
    "Total errors": "errors",
}
SUMMARY_COLUMNS = ["threads", "op", *_SUMMARY_LABELS.values(), "seconds"]

# The interval table's first 14 columns (the GC columns after them read 0 here: no JMX).
INTERVAL_COLUMNS = ["threads", "op", "total_ops", "op_rate", "partition_rate", "row_rate", "mean_ms",
                    "median_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "time_s", "stderr", "errors"]

_RUNNING = re.compile(r"^Running \[(?P<ops>[^\]]*)\] with (?P<threads>\d+) threads")
_SUMMARY = re.compile(r"^(?P<label>[A-Z][\w. ]+?)\s*:\s*(?P<value>[-\d,.]+|NaN)\b[^\[]*(?:\[(?P<per_op>.*)\])?")
_PER_OP = re.compile(r"(?P<op>[\w.]+): (?P<value>[-\d,.]+|NaN)")
_OPERATION_TIME = re.compile(r"^Total operation time\s*:\s*(\d+):(\d\d):(\d\d)")
_EXCEPTION_PREFIX = re.compile(r"^(?:[\w.$]+(?:Exception|Error)(?::\s*|$))+")


@dataclass
class StressOutput:
    """What one cassandra-stress invocation measured."""

    summary: pd.DataFrame
    intervals: pd.DataFrame
    failed: bool  # it printed FAILURE


def _number(text: str) -> float:
    return float("nan") if text == "NaN" else float(text.replace(",", ""))


def _interval_row(line: str) -> list[str] | None:
    cells = [c.strip() for c in line.split(",")]
    # '<op>, <total ops>, <op/s>, ...' (the sweep's closing table starts with 'N threadCount,': skipped)
    if len(cells) < 14 or not cells[1].isdigit() or "threadCount" in cells[0]:
        return None
    return cells[:14]


def parse_output(text: str) -> StressOutput:
    """Parse cassandra-stress's stdout (see the module docstring)."""
    summaries: list[dict] = []
    intervals: list[list] = []
    threads = 0
    section: dict[str, dict] = {}
    for line in text.splitlines():
        running = _RUNNING.match(line)
        if running:
            threads = int(running["threads"])
            section = {}
            continue
        row = _interval_row(line)
        if row is not None and threads:
            intervals.append([threads, row[0], *(_number(c) for c in row[1:])])
            continue
        time_match = _OPERATION_TIME.match(line)
        if time_match and section:
            h, m, s = (int(g) for g in time_match.groups())
            measured = [r[12] for r in intervals if r[0] == threads and r[1] == "total"]
            seconds = measured[-1] if measured else float(h * 3600 + m * 60 + s)
            for values in section.values():
                summaries.append({**values, "seconds": seconds})
            section = {}
            continue
        summary = _SUMMARY.match(line)
        if summary and summary["label"] in _SUMMARY_LABELS and threads:
            column = _SUMMARY_LABELS[summary["label"]]
            section.setdefault("total", {"threads": threads, "op": "total"})[column] = _number(summary["value"])
            for per_op in _PER_OP.finditer(summary["per_op"] or ""):
                op = per_op["op"]
                section.setdefault(op, {"threads": threads, "op": op})[column] = _number(per_op["value"])
    failed = any(line.strip() == "FAILURE" for line in text.splitlines())
    return StressOutput(pd.DataFrame(summaries, columns=SUMMARY_COLUMNS),
                        pd.DataFrame(intervals, columns=INTERVAL_COLUMNS), failed)


def failure_reason(stdout: str, stderr: str) -> str:
    """The most telling line of a failed run's output, without Java exception class names.

    ``java.lang.RuntimeException: ...NoHostAvailableException: All host(s) tried ...``
    becomes ``All host(s) tried ...``; a usage error gives the line before ``Usage:``.
    """
    for line in stderr.splitlines():
        line = line.strip()
        if line and not line.startswith("at ") and ("Exception" in line or "Error" in line):
            return _EXCEPTION_PREFIX.sub("", line).strip() or line
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if lines and lines[0] != "Usage:" and any(line.startswith("Usage:") for line in lines[:3]):
        return lines[0]
    for line in reversed(lines):
        if "error" in line.lower() or "exception" in line.lower() or line == "FAILURE":
            return line
    tail = [line.strip() for line in stderr.splitlines() if line.strip()]
    return (tail or lines or ["no output"])[-1]
