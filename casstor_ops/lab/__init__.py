"""The lab: cassandra-stress runs, their results and reports, the exists-query harness, test corpora.

Nothing of the store engine depends on this package; it measures the
cluster and makes data to measure with.

Vocabulary:

* **profile**: a cassandra-stress ``user`` YAML under ``stress-yaml/`` - :mod:`.stress`;
* **run** / **interval**: one cassandra-stress invocation and its per-second rows - :mod:`.stress_results`;
* **corpus**: deterministic files made for demos, tests and benchmarks - :mod:`.corpus`.

Example::

    >>> from casstor_ops.lab.stress import run_stress      # doctest: +SKIP
"""
