"""The commit bound B, read from the store's settings table by stores and reclaims alike.

The bound is a tunable, not a recorded setting (:data:`~casstor_ops.store.coordination.safety.SAFETY`
says why): stores enforce it (every block a commit relies on was verified
less than B ago) and online reclaim waits longer than it, both reading the
same ``settings`` row, so they agree.

Example::

    >>> set_commit_bound(session, 1)      # doctest: +SKIP
    >>> commit_bound_s(session)           # doctest: +SKIP
    1

Failures: :func:`set_commit_bound` raises CasstorError for a bound below
``SAFETY.min_commit_bound_s``; driver errors propagate.
"""

from __future__ import annotations

from cassandra.cluster import Session

from casstor_ops.errors import CasstorError
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.statements import Statements


def commit_bound_s(session: Session) -> int:
    """Seconds a store may rely on an existence check before its commit (at least ``SAFETY.min_commit_bound_s``;
    ``SAFETY.commit_bound_s`` when the row was never written)."""
    row = session.execute(Statements.for_session(session).setting, ("commit_bound_s",)).one()
    return max(SAFETY.min_commit_bound_s, int(row.value)) if row else SAFETY.commit_bound_s


def set_commit_bound(session: Session, seconds: int) -> None:
    """Write the store's commit bound (the tests shorten it; an operator may lengthen it for slow clients)."""
    if seconds < SAFETY.min_commit_bound_s:
        raise CasstorError(f"commit bound {seconds} s: must be at least {SAFETY.min_commit_bound_s} s")
    session.execute(Statements.for_session(session).write_setting, ("commit_bound_s", str(seconds)))
