"""Spark: the SparkSession, reading the tables as DataFrames, and bulk jobs on executors.

Vocabulary:

* **bulk task**: one Spark task storing or restoring a bin of files with an
  executor's own :class:`~casstor_ops.store.api.Store`; every file yields
  one *result row* (path or ID, status, bytes, error) - :mod:`.bulk_tasks`;
* **stored** blocks (index rows), **referenced** blocks (named by a head's
  block list), **garbage** (stored - referenced) and **missing**
  (referenced - stored) are defined once, in :mod:`.references`;
* **job**: a ``jobs/*.py`` entry point run with :func:`.job_runner.run_job`.

Built on :mod:`casstor_ops.store` and :mod:`casstor_ops.cluster`; used by
:mod:`casstor_ops.ops` and the CLI.

Example::

    >>> from casstor_ops.spark.session import spark_session          # doctest: +SKIP
    >>> from casstor_ops.spark.bulk_ingest import ingest             # doctest: +SKIP
    >>> ingest(spark_session("ingest"), "/data/tree", prefix="tree/")  # doctest: +SKIP
"""
