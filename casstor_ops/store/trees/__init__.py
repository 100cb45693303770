"""Where files come from and go to: trees of paths or URLs, their names as IDs, and path destinations.

Vocabulary:

* **tree**: the files below a directory (or a URL), or under an ID *prefix*
  ending in ``/``, stored or restored with one command (:mod:`.tree`, and
  Spark's runner over :mod:`.tree_files`, which does one file's work for both).
* **source**: one file a listing found, as (path, ID, size) (:mod:`.source_listing`);
  a *location* is where a tree is when it is a URL (:mod:`.locations`).
* **path ID**: a file name's bytes as a store ID and back (:mod:`.path_ids`).
* **destination**: a path a restore writes whole or not at all, through a
  *temporary* file renamed into place (:mod:`.destinations`, :mod:`.temporary`).

Layering inside :mod:`casstor_ops.store`: the file side (listing, path IDs,
locations, temporary files, destinations) imports nothing of the engine but
its records, so the ``Store`` facade can restore to a path; the tree runners
(:mod:`.tree_files`, :mod:`.tree`) sit on the facade. ``tests/unit/test_layering.py``
checks both.

Example::

    >>> from casstor_ops.store.trees.tree import store_tree      # doctest: +SKIP
"""
