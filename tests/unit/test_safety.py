"""The safety parameters: the relations between them are refused when broken, and docs/safety.md lists each one."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path

import pytest

from casstor_ops.store.coordination.safety import SAFETY, SafetyParameters

DOC = Path(__file__).resolve().parents[2] / "docs" / "safety.md"


@pytest.mark.parametrize("broken", [{"commit_bound_s": 0}, {"heartbeat_s": 21}, {"turn_margin_s": 30},
                                    {"turn_margin_s": 0}])
def test_durations_that_contradict_each_other_are_refused(broken: dict) -> None:
    with pytest.raises(ValueError):
        replace(SAFETY, **broken)


def test_forget_grace_is_two_commit_bounds() -> None:
    assert SAFETY.forget_grace_s(300) == 600
    assert replace(SAFETY, forget_grace_bounds=3).forget_grace_s(10) == 30


def test_the_safety_doc_tables_every_parameter() -> None:
    first_cells = [line.split("|")[1] for line in DOC.read_text().split("## ", 1)[0].splitlines()
                   if line.startswith("| `")]
    documented = {name for cell in first_cells for name in re.findall(r"`([a-z_]+)`", cell)}
    assert documented == {f.name for f in fields(SafetyParameters)}
