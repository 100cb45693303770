"""History: a file's versions read at a point in time, which of them are kept, and dropping the rest.

Vocabulary (used with one meaning everywhere in casstor):

* **version**: one row of ``casstor_meta.versions`` (every store of an ID
  makes one; ``rm`` makes a **delete marker**, a version that says "removed
  here" and has no content). Its *time* is its timeuuid's.
* **point in time**: a ``--version`` or an ``--at`` as read, and a tree at
  two times compared (``casstor diff``) (:mod:`.points_in_time`).
* **retention policy**: per ID prefix, restic's terms (``keep_last``,
  ``keep_within``, ``keep_hourly`` / ``daily`` / ``weekly`` / ``monthly``);
  the longest matching prefix's policy applies to an ID, and an ID under no
  policy keeps its newest version only, and nothing once that is a delete
  marker (:mod:`.policy`, :mod:`.retention`).
* **snapshot**: a name, a prefix and an instant ``at``: it *pins*, for each
  ID under the prefix, the version that was its head at ``at`` (the newest
  with a time at or before it, unless a delete marker) (:mod:`.snapshots`).
* **kept** version: one a policy, a snapshot or the **grace** keeps (the
  grace: a version superseded less than twice the commit bound ago, so a
  store, ``rm`` or snapshot still in flight never loses what it relies on);
  a **retained** version is a version row that exists: forget drops the
  others, so after a forget every retained version is kept or newer.
* **forget**: drops the version rows (and block lists) nothing keeps, and the
  directory entry of an ID left with none (:mod:`.forget`); reclaim then
  frees the blocks no retained version names (:mod:`casstor_ops.ops.reclaim`).

Layering: inside the store, above :mod:`casstor_ops.store.namespace` and
:mod:`casstor_ops.store.coordination` (whose commit bound sets the grace);
:mod:`.policy` and :mod:`.points_in_time` are pure (no I/O).

Example::

    >>> from casstor_ops.store.history.policy import Policy, Version, kept
    >>> sorted(kept([Version("b", 2_000_000, False), Version("a", 1_000_000, False)], Policy(keep_last=2), 0))
    ['a', 'b']
"""
