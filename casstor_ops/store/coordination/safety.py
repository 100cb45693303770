"""Every timing the safety of reclaim rests on, in one object: :data:`SAFETY`.

Reclaim deletes blocks that no head names while writers may be committing
heads that name them; what keeps the two apart is a handful of durations
that must agree with each other (``docs/safety.md`` has the proof, and
:mod:`casstor_ops.ops.reclaim` its steps). They are read from here and
nowhere else, so a reader checks one page, not five modules.

Example::

    >>> from casstor_ops.store.coordination.safety import SAFETY
    >>> SAFETY.commit_bound_s, SAFETY.late_head_margin_s, SAFETY.clock_skew_s
    (300, 5.0, 1.0)
    >>> SAFETY.lease_ttl_s > 3 * SAFETY.heartbeat_s
    True

Failures: none; building a :class:`SafetyParameters` whose durations
contradict each other raises ValueError at import time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SafetyParameters:
    """The durations stores, leases, claims and reclaims rely on (seconds)."""

    # The commit bound B: a store commits a head only if every block it relies on was verified less than B
    # before the head write, and an online reclaim waits B (plus the margin) after its index deletes before
    # it re-reads the heads. A tunable, not a recorded setting (the row ``commit_bound_s`` in ``settings``;
    # changing it never breaks dedup, and the tests shorten it); both sides read the same row, so they agree.
    commit_bound_s: int = 300
    # The least bound: a store whose checks are all younger than half of it need not read the row
    # (casstor_ops.store.engine.commit); a smaller value written to the row by hand counts as this.
    min_commit_bound_s: int = 1
    # Online reclaim re-reads the heads this long after the commit bound, counted from its index deletes. A
    # store whose head write is acknowledged later than the bound plus this after its oldest check cannot know
    # that the head reached the node before that re-read, so it checks its blocks again.
    late_head_margin_s: float = 5.0
    # Assumed bound ε on the clock difference between any two casstor hosts and nodes (NTP keeps them within
    # milliseconds): online reclaim measures it through CQL first and refuses to run when it may be larger,
    # since the driver stamps deletes and writes with the client's clock.
    clock_skew_s: float = 1.0
    # How long an offline reclaim waits for running writers' leases to end before it gives up.
    writers_timeout_s: int = 3600
    # A writer's or reclaim's lease row lives this long after its last heartbeat (CASSTOR_LEASE_TTL_S), and
    # is rewritten every heartbeat (CASSTOR_HEARTBEAT_S, at most a third of the TTL: the fence keeps one
    # period of margin, and beats come a little later than every period).
    lease_ttl_s: int = 60
    heartbeat_s: int = 15
    max_lease_ttl_s: int = 24 * 3600
    # A claim must outlive one block's upload and index row (well under a second here, seconds on a loaded
    # node; one that outlives it costs a duplicate upload, nothing worse). It is also how long a store
    # killed with -9 can delay the next store of the blocks it had claimed (with 60 s, the re-run in
    # tests/test_cmd_files.py took 67 s).
    claim_ttl_s: int = 20
    # Forget keeps a version whose successor (for a newest delete marker, the marker itself) is younger than this
    # many commit bounds, its grace: a snapshot is refused unless its row landed within one bound of its instant,
    # so a forget that read the snapshots before that row started less than a bound after the instant, and the
    # version the snapshot pins, superseded after it, is still in its grace; the second bound is the margin for a
    # store or rm still in flight (docs/safety.md, "History"). In bounds, not seconds, so that it follows the bound
    # the store records; far above clock_skew_s, the one clock it relies on.
    forget_grace_bounds: int = 2
    # An S3 multipart upload with no part newer than this is abandoned: forget drops its parts and its record (and
    # reclaim then their blocks). Far above the time between two parts of an upload in progress (seconds, minutes),
    # so that no upload still going is taken for abandoned.
    abandoned_upload_s: int = 7 * 24 * 3600
    # An S3 conditional write's turn on its key (casstor_ops.serve.s3.conditions) is a row with this TTL: a turn a
    # dead gateway left is free again after it. Its head write is sent only while the turn has turn_margin_s left:
    # the node applies or drops a write within its write timeout (2 s, Cassandra's default), so a write sent at
    # the fence has landed before another gateway can take the turn, with the rest of the margin for the client's
    # own send (its process paused, its request queued).
    turn_ttl_s: int = 30
    turn_margin_s: int = 10

    def __post_init__(self) -> None:
        if self.commit_bound_s < self.min_commit_bound_s:
            raise ValueError(f"commit bound {self.commit_bound_s} s below the least, {self.min_commit_bound_s} s")
        if 3 * self.heartbeat_s > self.lease_ttl_s:
            raise ValueError("the heartbeat must be at most a third of the lease TTL")
        if not 0 < self.turn_margin_s < self.turn_ttl_s:
            raise ValueError("a conditional write's turn needs a margin above 0 and below its TTL")

    def forget_grace_s(self, commit_bound_s: float) -> float:
        """Forget's grace in a store whose commit bound is ``commit_bound_s`` (``forget_grace_bounds`` of it)."""
        return self.forget_grace_bounds * commit_bound_s


SAFETY = SafetyParameters()
