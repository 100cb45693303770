"""``casstor reclaim``/``verify``/``report``/``upgrade`` take exactly the flags of ``jobs/reclaim.py``/``verify.py``/``dedup_stats.py``/``upgrade.py``,
plus ``--master``, and run the same job body."""

from __future__ import annotations

import argparse
import runpy

import pytest

from casstor_ops.cli.cmd_maintenance import REPORT, MaintenanceJob, RECLAIM, UPGRADE, VERIFY
from casstor_ops.cli.main import build_parser
from tests.support import ROOT


def _options(parser: argparse.ArgumentParser) -> dict[str, tuple]:
    return {a.dest: (tuple(a.option_strings), a.default, a.type, a.nargs, a.const)
            for a in parser._actions if a.dest != "help"}


def _command_parser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


@pytest.mark.parametrize("job", [RECLAIM, VERIFY, REPORT, UPGRADE], ids=lambda job: job.command)
def test_the_command_has_the_jobs_flags_and_master(job: MaintenanceJob) -> None:
    script = runpy.run_path(str(ROOT / job.script), run_name="probe")
    command = _options(_command_parser(job.command))
    assert command.pop("master")[0] == ("--master",)
    assert command == _options(script["build_parser"]()) and script["main"] is job.main

