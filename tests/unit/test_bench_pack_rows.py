"""bench.pack_rows' arithmetic: the mutations each shape costs a body, the ratios of the shapes' medians, the report."""

from __future__ import annotations

import pytest

from bench.pack_rows import SHAPES, PackConfig, _ratios, format_report, mutations_per_body


@pytest.mark.parametrize("group, expected", [(10, (1.0, 3.1, 2.1, 2.2)), (1, (1.0, 4.0, 3.0, 4.0)),
                                             (64, (1.0, 3.016, 2.016, 2.031))])
def test_a_shape_costs_its_rows_partitions_as_mutations(group: int, expected: tuple[float, ...]) -> None:
    # rows: a block, its index row, its version row each, and one entries partition a group; joined: a block and its
    # index row one mutation; packs: one pack partition a group instead of a row a block. A group of one packs
    # nothing.
    assert tuple(round(mutations_per_body(shape, group), 3) for shape in SHAPES) == expected


def _figures(per_s: float, node_ms: float | None) -> dict:
    return {"per_s": per_s, "client_ms": 0.5, "node_ms": node_ms, "compiler_ms": None if node_ms is None else 0.01}


def _results(per_s: dict[str, float], node_ms: dict[str, float | None]) -> dict:
    runs = {shape: [_figures(per_s[shape], node_ms[shape])] for shape in SHAPES}
    config = PackConfig(groups=100, rounds=3)
    return {"config": config.__dict__, "medians": {shape: runs[shape][0] for shape in SHAPES},
            "ratios": _ratios(runs), "mutations_per_body": {shape: mutations_per_body(shape, config.group)
                                                            for shape in SHAPES}}


def test_ratios_are_of_the_medians_and_the_report_prints_each_shape() -> None:
    results = _results({"raw": 2000.0, "rows": 800.0, "joined": 1200.0, "packs": 1000.0},
                       {"raw": 0.5, "rows": 1.5, "joined": 0.9, "packs": 1.2})
    assert results["ratios"] == {"rows_per_s_of_raw": 0.4, "joined_per_s_of_raw": 0.6, "packs_per_s_of_raw": 0.5,
                                 "joined_per_s_of_rows": 1.5, "packs_per_s_of_rows": 1.25, "rows_node_ms_of_raw": 3.0,
                                 "joined_node_ms_of_rows": 0.6, "packs_node_ms_of_rows": 0.8}
    report = format_report(results)
    assert "64 KiB bodies in groups of 10, 2 groups in flight, 1000 bodies a run; medians of 3" in report
    assert "  rows   3.1 mutations a body       800 bodies/s" in report and "packs_per_s_of_rows 1.250" in report


def test_a_remote_cluster_has_no_node_cpu_ratios() -> None:
    # Nodes that are not local have no CPU figure: the speed ratios stay, the CPU ones are left out, no error.
    results = _results({"raw": 2000.0, "rows": 800.0, "joined": 1200.0, "packs": 1000.0}, dict.fromkeys(SHAPES))
    assert set(results["ratios"]) == {"rows_per_s_of_raw", "joined_per_s_of_raw", "packs_per_s_of_raw",
                                      "joined_per_s_of_rows", "packs_per_s_of_rows"}
    assert "node n/a" in format_report(results)


def test_a_ratio_is_the_median_of_its_rounds_ratios() -> None:
    # Three rounds on a machine whose speed drifts: raw and rows each slow down round by round, rows at half of raw
    # in every round but the last. The ratio of their medians would be 0.55 (1100 / 2000); each round's own is 0.5,
    # 0.5 and 0.8, whose median, 0.5, is what the bench reports.
    raw = [_figures(per_s, 0.5) for per_s in (3000.0, 2000.0, 1000.0)]
    rows = [_figures(per_s, 1.0) for per_s in (1500.0, 1000.0, 800.0)]
    other = [_figures(1.0, 1.0)] * 3
    ratios = _ratios({"raw": raw, "rows": rows, "joined": other, "packs": other})
    assert ratios["rows_per_s_of_raw"] == 0.5 and ratios["rows_node_ms_of_raw"] == 2.0
