"""Conditional writes across gateways: a key's turn taken by a lightweight transaction, for conditional requests only.

A PutObject or CompleteMultipartUpload with ``If-Match`` or ``If-None-Match``,
and a DeleteObject with ``If-Match``, check the object's current ETag and
then write; two gateways (processes or hosts) doing so at once could both
see the condition hold. So a conditional request takes the key's turn first:
a row of ``object_locks`` written ``IF NOT EXISTS`` (Paxos: of concurrent
takers exactly one applies), with a TTL, so a gateway that dies holding it
blocks the key for ``SAFETY.turn_ttl_s`` at most. Under the turn it reads the
head, checks, writes the head, and gives the turn back (``DELETE … IF holder
= me``). The turn is taken only after the body is stored, right before the
head write, and held for that write alone. Unconditional writes take no turn
and stay on the fast path (their order is last-writer-wins, as S3's).

A turn is a lease, so it is fenced as one: once its TTL may end before a head
write sent now has landed (:meth:`Turn.fence`, the last step before each
attempt: a request whose head write was retried, or whose process was paused,
under its turn), the write is not sent; another gateway may hold the turn by
then, and its check would not have seen this write.

Example::

    >>> with ConditionTurns(session, st).turn("photos/a.jpg") as turn:   # doctest: +SKIP
    ...     turn.take(); check(); write()

Failures: a turn not obtained within :data:`WAIT_S` (another gateway holds
it that long), or held too long to write under (``SAFETY.turn_margin_s``), is
S3's 503 SlowDown: nothing was committed, the client retries.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Iterator

from cassandra.cluster import Session

from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.store.coordination.heartbeat import LeaseClock, LeaseTiming
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.statements import Statements

WAIT_S = 20.0    # how long a request waits for a turn before SlowDown
PAUSE_S = 0.01   # first pause between attempts; doubles, with jitter, up to 0.2 s


class Turn:
    """One request's turn on a key: :meth:`take` it (waiting), released when the ``with`` block ends."""

    def __init__(self, session: Session, st: Statements, file_id: str) -> None:
        self._session, self._st, self._id = session, st, file_id
        self._holder: uuid.UUID | None = None
        self._clock: LeaseClock | None = None  # the taken turn's row, counted from when its take was sent

    def take(self) -> None:
        holder, deadline, pause = uuid.uuid4(), time.monotonic() + WAIT_S, PAUSE_S
        while True:
            sent = time.monotonic()
            if self._session.execute(self._st.lock_object, (self._id, holder, SAFETY.turn_ttl_s)).one()[0]:
                break
            if time.monotonic() > deadline:
                raise S3Error("SlowDown", "Another conditional request on this key is under way: retry.")
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, 0.2)
        self._holder = holder
        self._clock = LeaseClock(LeaseTiming(SAFETY.turn_ttl_s, SAFETY.turn_margin_s), "the turn", "retry")
        self._clock.beat_ok(sent, time.monotonic())

    def fence(self, before: str) -> None:
        """SlowDown when the turn, if taken, may end before a write sent now lands (``before`` names that write):
        a lease's fence, with the margin for its period; nothing sent after it. A turn not taken (the request has
        no condition) fences nothing."""
        if self._clock is not None and self._clock.error(time.monotonic(), before) is not None:
            raise S3Error("SlowDown", f"This conditional request held its turn on the key too long to go on "
                                      f"{before}: retry.")

    def release(self) -> None:
        if self._holder is not None:
            self._session.execute(self._st.unlock_object, (self._id, self._holder))
            self._holder = None


class ConditionTurns:
    """The turns of one server's conditional writes."""

    def __init__(self, session: Session, st: Statements) -> None:
        self._session, self._st = session, st

    @contextlib.contextmanager
    def turn(self, file_id: str) -> Iterator[Turn]:
        turn = Turn(self._session, self._st, file_id)
        try:
            yield turn
        finally:
            turn.release()
