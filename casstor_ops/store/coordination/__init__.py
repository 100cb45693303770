"""What keeps writers and reclaims apart: leases, the reclaim window, clocks, and the timings they rest on.

Vocabulary:

* **lease**: a TTL row a running writer (or reclaim) keeps alive with a
  *heartbeat*, so an offline reclaim can wait for writers (:mod:`.leases`,
  :mod:`.heartbeat`); its *fence* raises before a write once the row may
  have lapsed.
* **window**: the cluster-wide reclaim flag, one at a time; *offline* stops
  writers, *online* only excludes other reclaims (:mod:`.reclaim_window`).
  Its *hold* is what a sweep needs of it, and only a held window makes one.
* **commit bound**: how long a store may rely on a block's existence check
  before its head write; online reclaim waits longer (:mod:`.commit_bound`).
* **clock skew**: how far a node's clock may be from this host's
  (:mod:`.clocks`).
* **safety parameters**: every duration the above rest on, in one object
  (:data:`.safety.SAFETY`, referenced by ``docs/safety.md``).

Layering: these modules import nothing of the store but its statements
(and each other), so the engine, the tree runners and the reclaim job can
all rely on them. ``tests/unit/test_layering.py`` checks it.

Example::

    >>> from casstor_ops.store.coordination.leases import WriterLease   # doctest: +SKIP
    >>> with WriterLease(session, "store") as lease: ...                 # doctest: +SKIP
"""
