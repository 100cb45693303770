"""How the store speaks to Cassandra: its keyspaces, every prepared statement, and the requests that carry them.

Vocabulary:

* **keyspace**: ``casstor_data`` (blocks and their index rows) or
  ``casstor_meta`` (everything else), named once in :mod:`.keyspaces`.
* **statement**: a prepared CQL statement of :class:`.statements.Statements`;
  a **query** is one with its values (:class:`.statements.Query`). No CQL is
  built from user data: every value is bound.
* **request queue**: a store's or restore's concurrent driver requests, with
  their retries and an in-flight bound (:mod:`.request_queue`); ``Requests``
  is the part of it a pipeline step sees.
* **run**: a sequence cut, in order, into groups bounded by a count and a
  number of bytes (:mod:`.runs`): an unlogged batch's rows, a tree's batch of
  files.
* **row requests**: one small row (or partition) a request, many at once,
  their results in order (:mod:`.row_requests`): listings, a Complete's parts.

Layering: the floor of the store; nothing here imports another part of it.
``tests/unit/test_layering.py`` checks it.

Example::

    >>> from casstor_ops.store.cql.statements import Statements   # doctest: +SKIP
    >>> st = Statements(session); session.execute(st.index_size, (digest,))  # doctest: +SKIP
"""
