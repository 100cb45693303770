"""Blocks: what a file's bytes become, how each is kept, and how the store learns it is stored.

Vocabulary:

* **block**: a content-defined chunk (FastCDC 2020, :mod:`.chunking`), keyed
  by its BLAKE2b-256 hash (:mod:`.hashing`), stored once in
  ``casstor_data.blocks``; a **seam** is an offset where an object's parts
  meet, around which their blocks are cut again as one store of the whole
  object cuts them (:mod:`.seams`).
* **codec**: how a block's content is kept, zstd or raw (:mod:`.codec`); the
  hash is always the plaintext's.
* **index row**: a block's row in ``existing_blocks``, written only after its
  content is acknowledged, so that a **check** (:mod:`.existence`) can trust
  it; the content and then the index row are a block's **upload**
  (:mod:`.block_uploads`).
* **claim**: a TTL row saying "this store is uploading this missing block"
  (:mod:`.claims`), so concurrent stores upload a shared new block once.
* **block list**: one version of a file as the ordered hashes of its blocks,
  or its *lone block* in its head row (:mod:`.block_list`).

Layering: above :mod:`casstor_ops.store.cql` and the coordination's safety
timings, below everything that stores or reads a file; nothing here knows
files, heads or directories but the block list's rows.
``tests/unit/test_layering.py`` checks it.

Example::

    >>> from casstor_ops.store.blocks.hashing import block_hash
    >>> block_hash(b"hello").hex()[:16]
    '324dcf027dd4a30a'
"""
