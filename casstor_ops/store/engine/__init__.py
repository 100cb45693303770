"""The engine: files in and files out, in the commit order that keeps readers and reclaims safe.

Vocabulary:

* **upload**: one file's pipeline, from its bytes to its head
  (:mod:`.upload`); a **batch** is many small files moved through each step
  together (:mod:`.batch_upload`); a **multipart** object is parts stored
  apart and committed as one file (:mod:`.multipart`).
* **commit**: the head write after every block the file names is verified,
  within the commit bound (:mod:`.commit`); the **head** is a file's newest
  version.
* **inline file**: a file whose content is in its head row, no block
  (:mod:`.inline`).
* **restore**: a version's blocks read, checked against their hashes and
  written in order (:mod:`.restore`; a small version in one answer,
  :mod:`.small_read`).
* **catalog**: a file's versions looked up and scanned (:mod:`.catalog`);
  **callbacks**: the facade's non-blocking calls, answered on the driver's
  thread (:mod:`.callbacks`).

Layering: above :mod:`casstor_ops.store.blocks`,
:mod:`casstor_ops.store.namespace` and the schema, below the ``Store`` facade
(:mod:`casstor_ops.store.api`), through which the commands and jobs reach
them; the S3 face (a Complete's commit, a head's read) and verify (an inline
file's content) use those few functions directly.
``tests/unit/test_layering.py`` checks the floors.

Example::

    >>> from casstor_ops.store.api import Store                     # doctest: +SKIP
    >>> Store().put("photo.jpg", "photos/photo.jpg").new_bytes       # doctest: +SKIP
"""
