"""python -m bench.small_files's run, one measured round after one warm-up round and one settling round, on the
session's test node with a tiny corpus (one small installed package): every step of casstor, restic and borg runs,
every restore is compared with its source, and the ratios and per-file figures come out; a restore that differs and a
bad flag each end with one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError

from bench.common import same_tree
from bench.small_files import PEERS, STEPS, TOOLS, _report, package_tree, run_benchmark


def test_one_round_after_a_warm_up_measures_every_step_of_every_tool(empty_store, tmp_path: Path) -> None:
    packages = package_tree(tmp_path / "small", ("iniconfig",))
    # One corpus: the tars go through the same steps (84 s with both, ~40 of them the second corpus's).
    results = run_benchmark({"small": tmp_path / "small"}, rounds=1, log=lambda line: None, warmup=1, settle=1)

    assert list(packages) == ["iniconfig"] and set(results["versions"]) == set(PEERS)
    for corpus, info in results["corpora"].items():
        assert info["files"] > 1 and info["bytes"] > 0, corpus
        assert set(info["ratios"]) == set(info["warmup_ratios"]) == {*STEPS, "disk", "disk_restic"}
        assert all(r["value"] > 0 and r["peer"] in PEERS for r in info["ratios"].values())
        figures = info["figures"]
        assert set(figures) == set(TOOLS) and all(f["disk_bytes"] > 0 for f in figures.values())
        for step in STEPS:
            assert all(figures[tool][step]["files_per_s"] > 0 for tool in TOOLS)
            # casstor talks to the node; the peers do not.
            assert figures["casstor"][step]["requests_per_file"] > max(figures[p][step]["requests_per_file"]
                                                                       for p in PEERS)
        assert figures["casstor"]["store"]["node_ms_per_file"] > 0
        assert all(0 <= figures["casstor"][step]["compiler_share"] <= 1 for step in STEPS)
        # One settling round at most, and it ran: there is none before it to have settled.
        assert len(info["settling_compiler_shares"]) == 1 and 0 <= info["settling_compiler_shares"][0] <= 1
    report = _report(results)
    assert "(against " in report and "small  store    casstor" in report and "after 1 warm-up" in report
    assert "    warm-up rounds (not in the medians" in report
    assert "    settling rounds, casstor alone: 1, the node's compiler's share of its CPU in each: " in report
    assert "the node's JIT compiler's share of its CPU in casstor's measured steps: store " in report


def test_a_restore_that_differs_is_one_line(tmp_path: Path) -> None:
    for name in ("source", "restored"):
        (tmp_path / name / "pkg").mkdir(parents=True)
        (tmp_path / name / "pkg" / "a.py").write_text("a = 1\n")
    (tmp_path / "restored" / "pkg" / "a.py").write_text("a = 2\n")
    with pytest.raises(CasstorError, match=r"^borg restored pkg/a.py with different bytes$"):
        same_tree(tmp_path / "source", tmp_path / "restored", "borg")
    (tmp_path / "source" / "pkg" / "b.py").write_text("b = 1\n")
    with pytest.raises(CasstorError, match=r"^borg did not restore pkg/b.py \(of 2 files\)$"):
        same_tree(tmp_path / "source", tmp_path / "restored", "borg")


def test_bad_flag_is_one_line_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.small_files", "--tree", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=60, cwd=project_root())
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "not a directory" in proc.stderr, proc.stderr
