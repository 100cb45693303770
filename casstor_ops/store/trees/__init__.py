"""Where files come from and go to: listings of paths or URLs, names as IDs, and path destinations.

Vocabulary:

* **source**: one file a listing found, as (path, ID, size)
  (:mod:`.source_listing`); a *location* is where a tree is when it is a URL
  (:mod:`.locations`).
* **path ID**: a file name's bytes as a store ID and back (:mod:`.path_ids`).
* **destination**: a path a restore writes whole or not at all, through a
  *temporary* file renamed into place (:mod:`.destinations`, :mod:`.temporary`).

Layering: below the engine, which restores to a path through
:mod:`.destinations`; nothing here imports the engine but its records
(``tests/unit/test_layering.py``). The runners of whole trees, which use
both, are :mod:`casstor_ops.store.bulk`.

Example::

    >>> from casstor_ops.store.trees.source_listing import list_source   # doctest: +SKIP
    >>> [f.file_id for f in list_source("photos/", prefix="photos/")]     # doctest: +SKIP
"""
