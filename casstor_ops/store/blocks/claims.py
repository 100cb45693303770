"""Claims: of concurrent stores that all find a shared block missing, exactly one uploads it.

A missing block is claimed before it is uploaded: ``INSERT … IF NOT EXISTS``
into ``block_claims``, a TTL row naming this store (its *writer*), in one
conditional batch per claims partition (:func:`claim_partition`),
so one Paxos round covers many blocks. A batch applied means every block of
it is ours to upload. A batch not applied returns the claims that exist:

* ours: the first attempt of a retried batch timed out but was applied
  (or an earlier claim of a block that vanished since): upload it;
* another writer's: wait for its index row, checking again after pauses that
  double (``AWAIT_FIRST_S`` to ``AWAIT_MAX_S``), each counted from when the
  block was found claimed or last checked, not from when the store gets round
  to the check; still missing once that claim has expired
  (``SAFETY.claim_ttl_s``, the writer died) means claim it again;
* none: claimed again, without the others.

A claim is done when the block's index row is written (:meth:`Claims.indexed`).

Example::

    >>> claims = Claims(requests, statements, checks, on_claimed=uploads.upload)  # doctest: +SKIP
    >>> claims.claim(missing)                                                   # doctest: +SKIP
    >>> while claims.awaiting: claims.check_awaited()                           # doctest: +SKIP

Failure behaviour: a failing store calls :meth:`Claims.release`. Its request queue
stops issuing work and lets what is in flight settle (bounded), then every
claim this store holds or may hold is deleted with ``IF writer = ?``: a block
is counted as possibly held from the moment its claim batch is submitted,
not when the answer is handled, since a batch applied on the server may have
its answer arrive late or never. Deleting a claim this store does not hold
is a no-op. A store killed with -9 releases nothing: its claims delay the
next store of those blocks until they expire.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from functools import partial

from casstor_ops.store.blocks.existence import ExistenceChecks
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.request_queue import Requests
from casstor_ops.store.cql.statements import Statements

# Every writer must agree: a block's claim lives in one partition. (16 until the lean write path: a casstor of
# before and one of after, storing the same new block at the same moment, may both upload it.)
CLAIM_PARTITIONS = 4


def claim_partition(digest: bytes) -> int:
    """The ``block_claims`` partition of a block."""
    return digest[0] % CLAIM_PARTITIONS


AWAIT_FIRST_S = 0.02   # first pause before checking again a block another writer claimed; doubles
AWAIT_MAX_S = 1.0
# How long a failing store waits for its requests in flight before releasing its claims: they normally
# answer in milliseconds; a claim batch that lands later than this is left to its TTL.
SETTLE_TIMEOUT_S = 5.0
RELEASE_TIMEOUT_S = 5.0


def _by_partition(hashes: Iterable[bytes]) -> dict[int, list[bytes]]:
    partitions: dict[int, list[bytes]] = {}
    for digest in hashes:
        partitions.setdefault(claim_partition(digest), []).append(digest)
    return partitions


class Claims:
    """The claims of one store: claim missing blocks, await other writers' blocks, release on failure."""

    def __init__(self, requests: Requests, statements: Statements, checks: ExistenceChecks,
                 on_claimed: Callable[[bytes], None], writer: uuid.UUID | None = None) -> None:
        self._requests = requests
        self._st = statements
        self._checks = checks
        self._on_claimed = on_claimed
        self.writer = writer or uuid.uuid4()
        self._possibly_held: set[bytes] = set()  # claims submitted, not yet indexed nor known to be another's
        self._awaited: list[bytes] = []          # missing blocks another writer claimed
        self._await_pause = AWAIT_FIRST_S
        self._await_due = 0.0                    # time.monotonic() when they are to be checked again

    @property
    def awaiting(self) -> bool:
        """Blocks other writers claimed are waiting to be checked again."""
        return bool(self._awaited)

    def claim(self, hashes: list[bytes]) -> None:
        """Claim missing blocks; ``on_claimed`` gets each one this store is to upload."""
        self._claim(hashes, again=False)

    def _claim(self, hashes: list[bytes], again: bool) -> None:
        """``again``: blocks already awaited once, whose pauses keep growing."""
        for partition, group in _by_partition(hashes).items():
            self._send(partition, group, again)

    def _send(self, partition: int, group: list[bytes], again: bool) -> None:
        self._possibly_held.update(group)
        rows = [(partition, digest, self.writer, SAFETY.claim_ttl_s) for digest in group]
        self._requests.submit_batch(self._st.claim_block, rows, partial(self._claimed, partition, group, again))

    def _claimed(self, partition: int, group: list[bytes], again: bool, rows) -> None:
        if rows[0][0]:  # [applied]: every claim of the batch is ours
            for digest in group:
                self._on_claimed(digest)
            return
        # Not applied: the rows returned are the claims that already exist, (applied, bucket, hash, writer).
        holders = {row[2]: row[3] for row in rows}
        rest = []
        for digest in group:
            holder = holders.get(digest)
            if holder == self.writer:
                self._on_claimed(digest)
            elif holder is None:
                rest.append(digest)
            else:
                self._possibly_held.discard(digest)
                if not self._awaited and not again:
                    self._await_pause = AWAIT_FIRST_S
                    self._await_due = time.monotonic() + AWAIT_FIRST_S
                self._awaited.append(digest)
        if rest:
            self._send(partition, rest, again)

    def check_awaited(self) -> None:
        """Once their pause (doubling) is over, check again the blocks other writers claimed; claim those still
        missing."""
        # A store checks its awaited blocks only when it has nothing else to do, at the end of a file: by then the
        # pause has often passed. Sleeping it again from there cost a tree store of Django's four release tars,
        # which share blocks, 20-60 ms at its end, where no other work overlaps (its store takes ~1.2 s).
        wait = self._await_due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._await_pause = min(AWAIT_MAX_S, self._await_pause * 2)
        self._await_due = time.monotonic() + self._await_pause
        hashes, self._awaited = self._awaited, []
        self._checks.check(hashes, on_missing=partial(self._claim, again=True))

    def indexed(self, hashes: Iterable[bytes]) -> None:
        """These blocks' index rows are written: their claims have done their job."""
        self._possibly_held.difference_update(hashes)

    def release(self) -> None:
        """The store failed: stop its request queue's work, let what is in flight settle, then give up every claim
        this store holds or may hold, so the next store need not wait for them to expire."""
        self._requests.cancel()
        self._requests.settle(SETTLE_TIMEOUT_S)
        for partition, group in _by_partition(self._possibly_held).items():
            rows = [(partition, digest, self.writer) for digest in group]
            self._requests.submit_batch(self._st.release_claim, rows, lambda _rows: None)
        # Best effort: the cluster may be what failed; unreleased claims expire after SAFETY.claim_ttl_s.
        self._requests.settle(RELEASE_TIMEOUT_S)
        self._possibly_held.clear()
