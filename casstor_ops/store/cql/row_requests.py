"""Requests of one small row (or partition) each, many at once, their results in order.

Listings, a Complete's parts and a removal of many files read or write one
small row per name: a version row, an ETag, a block list, a delete marker.
One request after the other, each waits for a round trip (a Complete of
10,000 parts took 60 s, botocore's read timeout). Sent through the driver's
``execute_concurrent`` (32 in flight), a listing of 2,000 S3 keys, which
reads each key's ETag, took 0.92-1.09 s; with every request of a page sent
before the first answer is awaited, 0.63-0.91 s (medians of 5 listings,
three alternated rounds: ``docs/benchmarks.md``): the driver writes many
requests to its socket at once and the node works through them together.
:func:`results` sends :data:`ROWS_AT_ONCE` requests, then awaits their
answers in order, then sends the next ones.

Example::

    >>> reads = [Query(st.object_digests, (head.id, head.version)) for head in heads]  # doctest: +SKIP
    >>> [rows.one() for rows in results(session, reads, st.named_rows)]               # doctest: +SKIP
    >>> write_all(session, [Query(st.insert_version, row) for row in rows])            # doctest: +SKIP

Failure behaviour: the first failed request's error is raised where its
result is awaited (the driver has retried it by its policy); the other
requests sent with it go on unawaited, and none after them is sent. Only for small rows: blocks go through
:class:`~casstor_ops.store.cql.request_queue.RequestQueue`, which bounds the bytes
in flight.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from cassandra.cluster import EXEC_PROFILE_DEFAULT, ResultSet, Session

from casstor_ops.store.cql.statements import Query

# Requests sent before the first answer is awaited: a page of a listing (1,000 keys) goes at once; a Complete of
# 10,000 parts sends ten such groups. Small rows only (under 1 KB a request), so a group holds under a megabyte.
ROWS_AT_ONCE = 1000


def results(session: Session, requests: Iterable[Query], execution_profile: Any = EXEC_PROFILE_DEFAULT,
            at_once: int = ROWS_AT_ONCE) -> Iterator[ResultSet]:
    """The result of each query of ``requests``, in order, ``at_once`` requests sent at a time.
    ``requests`` is read in the caller's thread, ``at_once`` ahead of the results (never in the driver's callbacks,
    where a read that blocks would wait for its own thread)."""
    requests = iter(requests)
    while chunk := list(itertools.islice(requests, at_once)):
        futures = [session.execute_async(statement, values, execution_profile=execution_profile)
                   for statement, values in chunk]
        for future in futures:
            yield future.result()


def write_all(session: Session, requests: Iterable[Query]) -> None:
    """Send every write of ``requests`` as :func:`results` does; return once each is acknowledged (the first
    failure raises, as there)."""
    for _ in results(session, requests):
        pass
