"""The clock-skew decision of online reclaim, without a node: readings in, a refusal (or None) out."""

from __future__ import annotations

from casstor_ops.store.coordination.clocks import ClockReading, clock_skew_refusal


def test_nodes_within_the_bound_are_accepted() -> None:
    readings = [ClockReading("10.0.0.1", 100.0, 100.3, 100.02), ClockReading("10.0.0.2", 100.0, 99.8, 100.02)]
    assert clock_skew_refusal(readings, 1.0) is None


def test_the_worst_node_beyond_the_bound_is_named_in_one_line() -> None:
    readings = [ClockReading("10.0.0.1", 100.0, 100.01, 100.02), ClockReading("10.0.0.2", 100.0, 97.51, 100.02)]
    refusal = clock_skew_refusal(readings, 1.0)
    assert refusal.startswith("online reclaim refused: node 10.0.0.2's clock is -2.500 s from this host's (±0.011 s)")
    assert "beyond the 1 s" in refusal and "\n" not in refusal


def test_the_round_trip_counts_against_the_bound() -> None:
    """An offset of 0.9 s is within 1 s, but a 0.4 s round trip leaves up to 1.1 s possible: refused."""
    assert clock_skew_refusal([ClockReading("n1", 100.0, 101.1, 100.4)], 1.0) is not None
    assert clock_skew_refusal([ClockReading("n1", 100.0, 100.91, 100.02)], 1.0) is None


def test_no_reading_is_refused() -> None:
    assert "no node's clock could be read" in clock_skew_refusal([], 1.0)
