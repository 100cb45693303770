"""The collector's thresholds a casstor command sets for itself (``store/gc_thresholds.py``)."""

from __future__ import annotations

import gc

import pytest

from casstor_ops.cli.main import main
from casstor_ops.store.gc_thresholds import FIRST_THRESHOLD, apply_gc_thresholds


@pytest.fixture()
def python_thresholds():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_only_the_young_generations_threshold_is_raised(python_thresholds) -> None:
    apply_gc_thresholds()
    assert gc.get_threshold() == (FIRST_THRESHOLD, 10, 10) and gc.isenabled()


def test_every_command_sets_it_before_anything_else(python_thresholds) -> None:
    """Even a command line refused as usage (exit 2) has set it: it comes before the arguments are read."""
    with pytest.raises(SystemExit):
        main(["no-such-command"])
    assert gc.get_threshold()[0] == FIRST_THRESHOLD
