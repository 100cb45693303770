"""The store engine: files in, files out, each block stored once.

Vocabulary (used with one meaning everywhere in casstor):

* **block**: a content-defined chunk of a file (FastCDC), keyed by its
  BLAKE2b-256 hash, stored once in ``casstor_data.blocks`` whatever the
  number of files that contain it; its *index row* in ``existing_blocks``
  says "this block is stored" and is written after the content.
* **block list**: one version of a file as the ordered hashes of its
  blocks (``casstor_meta.file_blocks``, keyed by file ID and version).
* **version**: one store (or removal: a *delete marker*) of an ID, a row of
  ``casstor_meta.versions``; the **head** is a file's newest version, written
  last, so readers see the old version or the new one, never a mix.
* **directory**, **entry**: where listings read names from, without a scan
  (:mod:`.namespace`, which defines its words).
* **inline file**: in a store made with ``inline_max`` > 0, a file of 1 to
  ``inline_max`` bytes whose content is in its head row: no block, no block
  list, no dedup (:mod:`.engine.inline`).
* **claim**: a TTL row saying "this store is uploading this missing block",
  so concurrent stores upload a shared new block once (:mod:`.blocks.claims`).
* **lease**, **window**, **commit bound**: what keeps writers and reclaims
  apart, in :mod:`.coordination` (its docstring defines them).
* **batch**: small files (at most ``SMALL_FILE_BYTES``) stored together,
  each step of the commit order for all of them in few requests
  (:mod:`.engine.batch_upload`, ``Store.put_many``; cut into *runs* by :mod:`.cql.runs`).
* **request queue**: a store's or restore's concurrent driver requests,
  with retries (:mod:`.cql.request_queue`); "window" means only the reclaim window.
* **codec**: how a block's content is kept (zstd or raw); the hash is always
  the plaintext's (:mod:`.blocks.codec`). *Logical* bytes are files' sizes,
  *unique* bytes their blocks once each, *stored* bytes those blocks as kept.
* **tree**: the files below a directory, or under an ID *prefix* ending in
  ``/``, stored or restored with one command (:mod:`.bulk`; where its files
  come from and go to is :mod:`.trees`).

Rooms, lowest first (``tests/unit/test_layering.py`` holds each to its
floor): :mod:`.cql` (keyspaces, every prepared statement, the request queue)
with :mod:`.records` (what operations return), :mod:`.ids` and
:mod:`.progress`; :mod:`.coordination` (leases, the reclaim window, clocks,
the safety parameters) and :mod:`.trees` (listings, path IDs, URLs, path
destinations); :mod:`.blocks` (chunking, hashes, the codec, index rows,
claims, block lists); :mod:`.namespace` (directories and their entries);
:mod:`.schema` (tables and recorded settings); :mod:`.engine` (the store
and restore pipelines, the commit, inline files, multipart objects);
:mod:`.history` (``--at``, retention policies, snapshots, forget); the
``Store`` facade, :mod:`.api`; and :mod:`.bulk` (whole trees through the
facade) above it. Lower layer: :mod:`casstor_ops.cluster` (connections);
nothing here imports Spark, the lab or the CLI.

Example::

    >>> from casstor_ops.store.api import Store          # doctest: +SKIP
    >>> Store().put("photo.jpg", "photos/photo.jpg").new_bytes  # doctest: +SKIP
"""
