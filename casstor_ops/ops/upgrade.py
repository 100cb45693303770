"""The upgrade to schema 5 as a Spark job: ``files`` copied by token slices in the executors (``casstor upgrade``).

``casstor init`` copies schema 4's heads in its own process (about 1,000-4,000
heads a second on the 2-core machine: an hour or more for ten million).
:func:`upgrade` runs the same upgrade (:func:`~casstor_ops.store.schema.init_store`:
the same window, the same checks, ``schema_version`` written last) with the
copy handed to Spark: the token ring split into :data:`SLICES_PER_CORE`
slices per core of the application, each slice one task that copies its heads
with :func:`~casstor_ops.store.namespace.upgrade.copy_heads` on a session of
its own. The copy is idempotent, so a retried task or a re-run after a kill
writes the same rows again; the driver holds the window (and its heartbeat)
throughout, as ``casstor init`` does.

Example::

    >>> settings = upgrade(spark, session, log=print)             # doctest: +SKIP
    upgrade: 12034 heads copied by 16 Spark tasks in 4.1 s

Failures: :func:`needs_upgrade` refuses a store that is not initialised
(:class:`~casstor_ops.errors.CasstorError`, exit
:data:`~casstor_ops.errors.EXIT_NOT_INITIALISED`) before anything is written;
:func:`upgrade` fails as ``init_store`` does, and a failed Spark task (retried
by Spark first) fails the job with the window left to a re-run to resume.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Callable

from cassandra.cluster import Session

from casstor_ops.cluster.connection import Endpoint, connect, endpoint_of
from casstor_ops.errors import EXIT_NOT_INITIALISED, CasstorError
from casstor_ops.store.namespace.upgrade import HeadCopier, TokenSlice, copy_heads
from casstor_ops.store.schema import SCHEMA_VERSION, UPGRADABLE, StoreSettings, init_store, read_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Slices a core: small enough that one slow slice does not hold the job up, few enough that a task's connect
# (~0.5 s) stays a small share of its copy.
SLICES_PER_CORE = 4


def needs_upgrade(session: Session) -> bool:
    """True for a store of a schema ``casstor init`` upgrades; False for one already of this schema.

    Failures: a store that is not initialised raises CasstorError (EXIT_NOT_INITIALISED), one of another schema
    CasstorError (1): 'casstor upgrade' never makes a store.
    """
    settings = read_settings(session)
    if settings is None:
        raise CasstorError("the store is not initialised: run 'casstor init' (there is nothing to upgrade)",
                           EXIT_NOT_INITIALISED)
    if settings.schema_version not in UPGRADABLE and settings.schema_version != SCHEMA_VERSION:
        raise CasstorError(f"the store has schema {settings.schema_version}; this casstor upgrades schemas "
                           f"{', '.join(map(str, sorted(UPGRADABLE)))} to {SCHEMA_VERSION}")
    return settings.schema_version in UPGRADABLE


def upgrade(spark: "SparkSession", session: Session, log: Callable[[str], None] = lambda msg: None) -> StoreSettings:
    """Upgrade the store of ``session`` in place, its heads copied by Spark tasks; the store's settings after."""
    return init_store(session, log=log, copier=spark_copier(spark, endpoint_of(session)))


def spark_copier(spark: "SparkSession", endpoint: Endpoint) -> HeadCopier:
    """A :data:`~casstor_ops.store.namespace.upgrade.HeadCopier` whose copy runs as one Spark task a token slice."""
    def copy(session: Session, directory_rows: int, log: Callable[[str], None]) -> int:
        slices = TokenSlice.split(spark.sparkContext.defaultParallelism * SLICES_PER_CORE)
        started = time.monotonic()
        copied = (spark.sparkContext.parallelize(slices, len(slices))
                  .map(partial(_copy_slice, endpoint, directory_rows)).sum())
        log(f"upgrade: {copied} heads copied by {len(slices)} Spark tasks in {time.monotonic() - started:.1f} s")
        return copied
    return copy


def _copy_slice(endpoint: Endpoint, directory_rows: int, ring: TokenSlice) -> int:
    session = connect(endpoint, start=False)
    try:
        return copy_heads(session, directory_rows, ring=ring)
    finally:
        session.cluster.shutdown()
