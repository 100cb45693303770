"""A joining node that gave up on its seed is started once more, waiting longer for gossip; any other start-up
failure is final (no JVM)."""

from __future__ import annotations

import pytest

from casstor_ops.cluster.launcher import FAST_RING_DELAY_MS, PATIENT_RING_DELAY_MS, LocalCluster
from casstor_ops.errors import CasstorError


class FakeNode:
    """Fails its first ``len(errors)`` starts with the given errors, then starts; records each start's ring delay."""

    index = 3

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.ring_delays: list[int] = []

    def start(self, log, seeds: str, ring_delay_ms: int = FAST_RING_DELAY_MS) -> None:
        self.ring_delays.append(ring_delay_ms)
        if self.errors:
            raise CasstorError(self.errors.pop(0))


# Cassandra 5.0.9's own words: the shadow round's timeout, and the bootstrap's check for a live seed.
SEED_MISSED = ["java.lang.RuntimeException: Unable to gossip with any peers",
               "java.lang.IllegalStateException: Unable to contact any seeds: [/127.0.0.1:7000]"]


@pytest.mark.parametrize("missed", SEED_MISSED)
def test_a_node_that_missed_its_seed_is_started_again_with_a_longer_ring_delay(missed: str) -> None:
    """Injects each start-up failure seen on a loaded machine (the shadow round's and the bootstrap's); checks
    one more start with the patient ring delay, and a line saying why."""
    node, said = FakeNode(f"node3 exited with code 3 during start-up; see x: {missed}"), []
    LocalCluster._start_joining(node, said.append, "127.0.0.1:7000")
    assert node.ring_delays == [FAST_RING_DELAY_MS, PATIENT_RING_DELAY_MS]
    assert said == ["node3: the seed did not answer in time; starting it again, waiting longer for gossip"]


@pytest.mark.parametrize("errors", [("port 127.0.0.1:9042 is already in use",),
                                    tuple(SEED_MISSED)])
def test_other_failures_and_a_second_miss_are_final(errors: tuple[str, ...]) -> None:
    node = FakeNode(*errors)
    with pytest.raises(CasstorError):
        LocalCluster._start_joining(node, lambda line: None, "127.0.0.1:7000")
    assert len(node.ring_delays) == len(errors)
