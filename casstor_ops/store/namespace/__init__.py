"""Where a file's name lives: directories, their entries, and the versions behind an ID.

Vocabulary:

* **version**: one store (or removal) of an ID, a row of ``casstor_meta.versions``
  keyed by ID and clustered newest first: the newest row is the ID's *head*
  (one partition read, the commit point of a store). A **delete marker** is a
  version that says "removed here" (``deleted``).
* **directory**: an ID's prefix up to and including its last ``/`` (``""`` for
  an ID without one); the rest is its **name** (:mod:`.layout`).
* **entry**: a directory's row for one name, in ``casstor_meta.entries``: a
  file's newest version, summarised (what a listing shows), or a
  **subdirectory marker** (a name ending in ``/``). Entries are an index: the
  versions are the truth.
* **bucket** and **generation**: a directory's entries are spread over
  partitions ``(dir, bucket)``; generation *g* has 2^g buckets, and a directory
  moves to the next generation when a bucket of the current one holds
  ``directory_rows`` entries, so no partition grows past it (:mod:`.layout`,
  :mod:`.entries`). A listing merges the buckets of every generation so far.

Layering: inside the store, below the engine (``catalog``, ``commit``) that
writes and reads through it; imports only :mod:`casstor_ops.store.cql.statements`,
records, the batch helpers of :mod:`casstor_ops.store.cql.request_queue`
(``unlogged_batch``, ``row_batches``) and the lower layers.

Example::

    >>> from casstor_ops.store.namespace.layout import split_id
    >>> split_id("photos/2024/a.jpg")
    ('photos/2024/', 'a.jpg')
"""
