"""Whole trees through the ``Store`` facade: one file's work, and the runner.

Vocabulary:

* **tree**: the files below a directory (or a URL), or under an ID *prefix*
  ending in ``/``, stored or restored with one command.
* **item**: one file of a tree, stored unless it is committed *unchanged*
  (size, mode, mtime, content hash), or restored below a directory
  (:mod:`.tree_files`); its *row* is what the report says of it.
* **batch**: small files of a tree (at most
  :data:`~casstor_ops.store.engine.batch_upload.SMALL_FILE_BYTES` each) taken as one
  item, each step for all of them at once: stored through
  :class:`~casstor_ops.store.engine.batch_upload.BatchUpload`, restored through
  :mod:`.batch_restore`; each file still has its own row.
* **runner**: what drives the items: :mod:`.tree` (``casstor store DIR
  PREFIX``, ``casstor restore PREFIX/ DIR``), or Spark's executors
  (:mod:`casstor_ops.spark.bulk_tasks`), which call the same :mod:`.tree_files`.
* **part**: the items of a tree one client process stores, when several store
  it (:mod:`.tree_processes`: a store of many small files is bound by the
  client's Python, so a second process pays); each process takes the next
  item in turn, so a part is known only once the store has ended. The
  others start once the first has *work*: a file not listed unchanged.

Layering: above the engine's facade (:mod:`casstor_ops.store.api`) and the
file side (:mod:`casstor_ops.store.trees`); nothing in the engine imports it
(``tests/unit/test_layering.py``).

Example::

    >>> from casstor_ops.store.bulk.tree import store_tree      # doctest: +SKIP
    >>> store_tree(Store(), "photos/", "photos/").failed          # doctest: +SKIP
"""
