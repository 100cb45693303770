"""One :class:`~casstor_ops.store.api.Store` per process: a Spark Python worker shares it across its tasks.

Spark reuses a Python worker for many tasks (``spark.python.worker.reuse``,
on by default), so a module-level cache turns "connect per task" (a
control connection, a pool per host, schema metadata, prepared
statements: ~0.3-1 s) into "connect once per worker"; drivers and
benchmark workers use the same cache for the same reason. The cache is keyed
by the pickled :class:`~casstor_ops.cluster.connection.Endpoint`, so two stores
on different clusters in one application never share a session. Workers
never start a node (``start=False``): they use the cluster the driver
checked (a driver calls :func:`~casstor_ops.cluster.connection.ensure_running` first).

Example (inside a ``mapPartitions`` function)::

    >>> store = store_for(endpoint)            # doctest: +SKIP
    >>> store.put(path, file_id, lease=False)  # doctest: +SKIP

Failures: an unreachable cluster or an uninitialised store raise
:class:`~casstor_ops.errors.CasstorError` from the first call (and again
from the next, as nothing is cached for it). Sessions live as long as the
process: the driver's own exit hook shuts their clusters down.
"""

from __future__ import annotations

import pickle
import threading

from casstor_ops.cluster.connection import Endpoint, connect
from casstor_ops.store.api import Store

_stores: dict[bytes, Store] = {}
_lock = threading.Lock()


def store_for(endpoint: Endpoint) -> Store:
    """This process's store on ``endpoint``, connecting on first use."""
    key = pickle.dumps(endpoint)
    with _lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = Store(connect(endpoint, start=False))
    return store

