"""The two keyspaces' names: the one thing both the DDL and every statement name.

The DDL is in :mod:`casstor_ops.store.schema`, the statements in :mod:`.statements`.

``casstor_data`` holds the bulk (block content, its index, claims);
``casstor_meta`` the small, precious rows (heads, block lists, settings,
leases, the reclaim window). Why two: see :mod:`casstor_ops.store.schema`.

Example::

    >>> f"SELECT hash FROM {DATA_KS}.existing_blocks"
    'SELECT hash FROM casstor_data.existing_blocks'
"""

DATA_KS = "casstor_data"
META_KS = "casstor_meta"
