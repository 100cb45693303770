"""A SparkSession wired to the store's cluster through the Spark Cassandra Connector.

``make setup`` writes the connector package, the venv's Python and the
loopback driver address into pyspark's ``spark-defaults.conf``, so plain
``spark-submit`` and notebooks get them; this module adds what depends on
the environment at run time: the contact points (local node or
``CASSTOR_NODES``), credentials, TLS and the consistency level.

Example::

    >>> spark = spark_session("casstor-report")          # doctest: +SKIP
    >>> read_table(spark, "casstor_meta", "files").count()  # doctest: +SKIP

Starts the embedded local node first when ``CASSTOR_NODES`` is unset;
raises :class:`~casstor_ops.errors.CasstorError` when it cannot.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import DataFrame, SparkSession

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env, ensure_running


def spark_session(app_name: str = "casstor", master: str | None = None,
                  endpoint: Endpoint | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """Get or create the SparkSession; ``master`` None keeps spark-submit's (or local[*])."""
    endpoint = endpoint or endpoint_from_env()
    ensure_running(endpoint)
    # A SparkContext made in-process (notebooks, tests, the CLI) starts its Python workers with
    # $PYSPARK_PYTHON or "python3"; spark.pyspark.python from spark-defaults only reaches spark-submit.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    settings = {
        "spark.cassandra.connection.host": ",".join(endpoint.hosts),
        "spark.cassandra.connection.port": str(endpoint.port),
        "spark.cassandra.input.consistency.level": endpoint.consistency,
        "spark.cassandra.output.consistency.level": endpoint.consistency,
        **({"spark.cassandra.connection.localDC": endpoint.local_dc} if endpoint.local_dc else {}),
        **({"spark.cassandra.auth.username": endpoint.username,
            "spark.cassandra.auth.password": endpoint.password or ""} if endpoint.username else {}),
        **({"spark.cassandra.connection.ssl.enabled": "true"} if endpoint.ssl_ca else {}),
        **(conf or {}),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def read_table(spark: SparkSession, keyspace: str, table: str) -> DataFrame:
    """A table as a DataFrame, split by token range across tasks."""
    return spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table).load()
