"""Reaching Cassandra: the embedded local nodes, their JVM and installs, and driver sessions.

Vocabulary:

* **endpoint**: where a client connects (``CASSTOR_NODES`` and friends, or
  the embedded local cluster when unset) - :mod:`.endpoint`; sessions to it - :mod:`.connection`;
* **local cluster**: 1..N real Cassandra nodes on 127.0.0.x that the
  launcher starts one at a time and stops by pid - :mod:`.launcher`;
* **home** / **cache**: where node data and downloaded jars live - :mod:`.paths`.

This is the lowest layer: it imports nothing else of casstor but
:mod:`casstor_ops.errors`. A session made by :func:`.connection.connect`
loads the launcher only when it has to start the embedded node.

Example::

    >>> from casstor_ops.cluster.connection import connect   # doctest: +SKIP
    >>> session = connect()                                  # doctest: +SKIP
"""
