"""Existence checks through the Python driver, counted per block checked.

cassandra-stress binds the same key to all five markers of
``hash IN (?, ?, ?, ?, ?)``, so its ``exists_five`` reads one row a query
and cannot say whether batching checks pays. This harness runs the same
queries as the stress profiles with the store's own driver session, binds
FIVE DISTINCT loaded keys to the IN query, and reports blocks checked per
second: the figure the store cares about when it asks "which of these
blocks do you already have?".

Concurrency is a number of client threads, each running one query at a
time (like cassandra-stress's ``-rate threads=N``), on one shared session.

Example::

    >>> keys = loaded_keys(session, "existing_blocks", limit=2000)          # doctest: +SKIP
    >>> df = exists_study(session, keys, concurrencies=[4, 16], checks=4000)  # doctest: +SKIP
    >>> df[["query", "concurrency", "blocks_per_s", "p95_ms"]]               # doctest: +SKIP

Raises :class:`~casstor_ops.errors.CasstorError` for an unknown query or
table, too few loaded keys, or a failing query (its message, one line).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from cassandra.cluster import Session

from casstor_ops.errors import CasstorError
from casstor_ops.lab.stress import PROFILES, STRESS_KS

# query -> (keys bound per query, CQL); the same statements as the stress-yaml profiles.
QUERIES = {
    "exists_one": (1, "SELECT hash FROM {table} WHERE hash = ? LIMIT 1"),
    "exists_five": (5, "SELECT hash FROM {table} WHERE hash IN (?, ?, ?, ?, ?) LIMIT 5"),
    "exists_count": (1, "SELECT count(*) FROM {table} WHERE hash = ? LIMIT 1"),
}
TABLES = frozenset(PROFILES.values())


@dataclass(frozen=True)
class ExistsMeasurement:
    """One query at one concurrency; rates per second, latencies per query in ms."""

    query: str
    table: str
    concurrency: int
    queries: int
    blocks_checked: int
    blocks_found: int
    seconds: float
    queries_per_s: float
    blocks_per_s: float
    median_ms: float
    p95_ms: float
    p99_ms: float


def _table(table: str) -> str:
    if table not in TABLES:
        raise CasstorError(f"exists harness: table {table!r} is not one of {', '.join(sorted(TABLES))}")
    return f"{STRESS_KS}.{table}"


def loaded_keys(session: Session, table: str = "existing_blocks", limit: int = 2000) -> list[bytes]:
    """Up to ``limit`` distinct keys present in a stress table (in token order)."""
    statement = session.prepare(f"SELECT hash FROM {_table(table)} LIMIT ?")
    statement.fetch_size = 1000
    return [row.hash for row in session.execute(statement, (limit,))]


def measure_exists(session: Session, query: str, keys: Sequence[bytes], *, concurrency: int,
                   checks: int, table: str = "existing_blocks") -> ExistsMeasurement:
    """Check ``checks`` blocks with ``query`` from ``concurrency`` threads.

    ``exists_five`` checks five distinct keys a query (``checks / 5``
    queries); the others one. Keys are taken round-robin from ``keys``.
    """
    if query not in QUERIES:
        raise CasstorError(f"exists harness: query {query!r} is not one of {', '.join(QUERIES)}")
    per_query, cql = QUERIES[query]
    if len(keys) < per_query:
        raise CasstorError(f"exists harness: {query} needs at least {per_query} loaded keys, got {len(keys)}")
    if concurrency < 1 or checks < per_query:
        raise CasstorError(f"exists harness: concurrency {concurrency} and checks {checks} must be positive")
    statement = session.prepare(cql.format(table=_table(table)))
    total = checks // per_query
    # Query i binds keys i*k .. i*k+k-1 (mod len): k consecutive, hence distinct, keys.
    bound = [tuple(keys[(i * per_query + j) % len(keys)] for j in range(per_query)) for i in range(total)]
    latencies = np.zeros(total)
    found = np.zeros(total, dtype=np.int64)
    next_index = iter(range(total))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next(next_index, None)
            if i is None:
                return
            started = time.perf_counter()
            rows = session.execute(statement, bound[i]).all()
            latencies[i] = time.perf_counter() - started
            # count(*) answers one row holding the count; the others one row per key found.
            found[i] = rows[0][0] if query == "exists_count" else len(rows)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(worker) for _ in range(concurrency)]
        for future in futures:
            try:
                future.result()
            except Exception as err:  # the driver's own exception types; one line for the user
                raise CasstorError(f"exists harness: {query} on {table} failed: {err}") from None
    seconds = time.perf_counter() - started
    checked = total * per_query
    ms = latencies * 1000
    return ExistsMeasurement(query, table, concurrency, total, checked, int(found.sum()), seconds,
                             total / seconds, checked / seconds, float(np.percentile(ms, 50)),
                             float(np.percentile(ms, 95)), float(np.percentile(ms, 99)))


def exists_study(session: Session, keys: Sequence[bytes], *, queries: Sequence[str] = ("exists_one", "exists_five"),
                 concurrencies: Sequence[int] = (4, 8, 16, 32), checks: int = 5000,
                 table: str = "existing_blocks") -> pd.DataFrame:
    """:func:`measure_exists` for every query and concurrency, one row each."""
    rows = [asdict(measure_exists(session, q, keys, concurrency=c, checks=checks, table=table))
            for c in concurrencies for q in queries]
    return pd.DataFrame(rows)


def blocks_per_s_ratio(study: pd.DataFrame, concurrency: int, query: str = "exists_five",
                       reference: str = "exists_one") -> float:
    """How many times more blocks a second ``query`` checks than ``reference`` at ``concurrency``."""
    at = study[study.concurrency == concurrency].set_index("query").blocks_per_s
    if query not in at or reference not in at:
        raise CasstorError(f"exists harness: no {query} and {reference} measured at concurrency {concurrency}")
    return float(at[query] / at[reference])
