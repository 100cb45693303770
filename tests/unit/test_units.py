"""Byte counts for people, and the reclaim job's imports staying free of pandas and matplotlib."""

from __future__ import annotations

import subprocess
import sys

from casstor_ops.ops.units import byte_unit, human_bytes
from tests.support import ROOT


def test_human_bytes_picks_the_unit_with_one_to_four_digits() -> None:
    assert human_bytes(None) == "-"
    assert human_bytes(0) == "0 B"
    assert human_bytes(1023) == "1023 B"
    assert human_bytes(1024) == "1.00 KiB"
    assert human_bytes(1536) == "1.50 KiB"
    assert human_bytes(5 << 30) == "5.00 GiB"
    assert human_bytes(3 << 50) == "3072.00 TiB"  # TiB is the largest unit
    assert byte_unit(0.5) == ("B", 1) and byte_unit((1 << 20) - 1) == ("KiB", 1 << 10)


def test_reclaim_job_imports_neither_pandas_nor_matplotlib() -> None:
    # A fresh interpreter: this test process may have loaded both already.
    probe = ("import runpy, sys; runpy.run_path('jobs/reclaim.py', run_name='probe'); "
             "print(sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
