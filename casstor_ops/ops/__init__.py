"""Operations over the whole store: reclaim, verify and the dedup report.

Vocabulary (the sets themselves are defined in :mod:`casstor_ops.spark.references`):

* **garbage**: stored blocks no head names; reclaim deletes them;
* **missing**: blocks a head names that are not stored; verify explains them;
* **plan**, **stats**, **execute**: reclaim decides what to delete (a plan that
  refuses to run while blocks are missing), shows its figures, then deletes;
* **window** and **lease**: see :mod:`casstor_ops.store`;
* **exclusive** / **shared** bytes of a prefix: blocks only its files name (what removing them and a
  reclaim frees) / that files elsewhere name too (the dedup report, :mod:`casstor_ops.ops.dedup_sharing`).

Built on :mod:`casstor_ops.spark` and :mod:`casstor_ops.store`.

Example::

    >>> from casstor_ops.ops.reclaim import reclaim     # doctest: +SKIP
    >>> reclaim(spark, session, online=True).stats      # doctest: +SKIP
"""
