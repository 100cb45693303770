"""Retention policies per ID prefix: ``casstor retention set | show | rm``.

A policy is one row of ``casstor_meta.retention``, keyed by ``"/" + prefix``
(as a directory's key: the whole store's prefix ``""`` needs a key too);
setting a prefix's policy again replaces it. What a policy keeps is
:mod:`.policy`'s; forget applies it (:mod:`.forget`).

Example::

    >>> set_policy(session, st, "backups/", Policy(keep_daily=7, keep_weekly=4))   # doctest: +SKIP
    >>> policies(session, st)["backups/"].describe()                               # doctest: +SKIP
    '--keep-daily 7 --keep-weekly 4'

Failures: a policy without a term, or with a negative one, raises
:class:`~casstor_ops.errors.CasstorError` before anything is written;
removing a prefix without a policy raises
:class:`~casstor_ops.errors.NotFoundError`; the driver's errors propagate.
"""

from __future__ import annotations

from cassandra.cluster import Session

from casstor_ops.errors import NotFoundError
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.history.policy import Policy
from casstor_ops.store.namespace.layout import directory_key


def set_policy(session: Session, st: Statements, prefix: str, policy: Policy) -> Policy:
    """Make ``policy`` the policy of ``prefix`` (replacing any); returns it."""
    session.execute(st.set_retention, (directory_key(prefix), *policy.checked().row()))
    return policy


def policies(session: Session, st: Statements) -> dict[str, Policy]:
    """Every policy, by prefix (in prefix order)."""
    found = {row.prefix[1:]: Policy(*row[1:]) for row in session.execute(st.retention_policies)}
    return dict(sorted(found.items()))


def remove_policy(session: Session, st: Statements, prefix: str) -> None:
    """Drop the policy of ``prefix`` (its IDs fall to a shorter prefix's policy, or to none)."""
    if not session.execute(st.delete_retention, (directory_key(prefix),)).was_applied:
        raise NotFoundError(f"no retention policy for prefix {prefix!r} (see 'casstor retention show')")
