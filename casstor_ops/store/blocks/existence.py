"""Existence checks: which blocks does the store already have?

A store asks the light ``existing_blocks`` index, never the blocks
themselves, in batches of distinct hashes (``SELECT hash … WHERE hash IN ?
LIMIT ?``, the LIMIT being the number of keys asked: an explicit bound on the
rows returned). Each hash found is reported with the time its check was sent
(what the commit protocol's bound counts from); the missing ones of a batch go
together to the caller's handler (claims, or re-reads during the commit).

Example::

    >>> checks = ExistenceChecks(requests, statements, on_found=lambda digest, sent: None)  # doctest: +SKIP
    >>> checks.check(hashes, on_missing=claims.claim)                                     # doctest: +SKIP

Failure behaviour: a check is a read, retried by the
:class:`~casstor_ops.store.cql.request_queue.RequestQueue`; one that keeps failing
raises from the request queue's ``poll``, and no handler runs for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from casstor_ops.store.cql.request_queue import Requests
from casstor_ops.store.cql.statements import Statements

CHECK_BATCH = 256  # distinct hashes per existence check

OnFound = Callable[[bytes, float], None]
"""Called with a block found and the ``time.monotonic()`` its check was sent."""
OnMissing = Callable[[list[bytes]], None]
"""Called with the blocks of one check that the store does not have."""


class ExistenceChecks:
    """Batched existence checks through a request queue; results go to handlers."""

    def __init__(self, requests: Requests, statements: Statements, on_found: OnFound,
                 batch: int = CHECK_BATCH) -> None:
        self._requests = requests
        self._st = statements
        self._on_found = on_found
        self.batch = batch

    def check(self, hashes: list[bytes], on_missing: OnMissing) -> None:
        """Check ``hashes`` (distinct) in batches; found ones go to ``on_found``, missing ones to ``on_missing``."""
        for start in range(0, len(hashes), self.batch):
            group = hashes[start:start + self.batch]
            self._requests.submit(self._st.existing, (group, len(group)),
                                partial(self._checked, group, time.monotonic(), on_missing))

    def _checked(self, hashes: list[bytes], sent: float, on_missing: OnMissing, rows) -> None:
        found = {row[0] for row in rows}
        for digest in hashes:
            if digest in found:
                self._on_found(digest, sent)
        missing = [digest for digest in hashes if digest not in found]
        if missing:
            on_missing(missing)
