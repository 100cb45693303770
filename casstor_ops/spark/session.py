"""A SparkSession wired to the store's cluster through the Spark Cassandra Connector.

``make setup`` writes the connector package, casstor's auth hooks and the
venv's Python into pyspark's ``spark-defaults.conf``, so plain
``spark-submit`` and notebooks get them; this module adds what depends on
the environment at run time: the contact points (local node or
``CASSTOR_NODES``), credentials, TLS, the consistency level, and the
driver's address.

* **Credentials**: with ``CASSTOR_PASSWORD_FILE`` the connector gets the role
  and the file's *path* (``spark.casstor.auth.*``, read by
  ``casstor.auth.SparkAuthConfFactory`` from ``java/src`` when it connects):
  the password is in no Spark setting, so not in Spark's logged
  configuration, event log, UI or any process's command line. The file must
  be at the same path on every executor. A password given in
  ``CASSTOR_PASSWORD`` goes into ``spark.cassandra.auth.password``, which
  Spark redacts from its UI, logs and event log (``spark.redaction.regex``)
  but holds in its configuration.
* **TLS**: ``CASSTOR_SSL_CA`` becomes a PKCS12 truststore
  (:func:`~casstor_ops.cluster.java_tls.truststore_for`) at the same path on
  every executor of this machine or of a shared cache.
* **Driver address**: 127.0.0.1 for ``local[...]`` masters and a standalone
  master on a loopback address (every executor is on this machine); for any
  other master Spark's default (this machine's address), so remote
  executors can reach the driver. A ``spark.driver.host`` given to Spark wins.

Example::

    >>> spark = spark_session("casstor-report")          # doctest: +SKIP
    >>> read_table(spark, "casstor_meta", "versions").count()  # doctest: +SKIP

Starts the embedded local node first when ``CASSTOR_NODES`` is unset;
raises :class:`~casstor_ops.errors.CasstorError` when it cannot.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

from pyspark import SparkConf, SparkContext
from pyspark.sql import DataFrame, SparkSession

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env, ensure_running
from casstor_ops.cluster.java_tls import CIPHER_SUITES, TRUSTSTORE_PASSWORD, truststore_for

LOOPBACK = "127.0.0.1"
AUTH_FACTORY = "casstor.auth.SparkAuthConfFactory"  # java/src/casstor/auth, on spark.jars since 'make setup'


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
        **connector_auth(endpoint),
        **connector_tls(endpoint),
        **(conf or {}),
    }
    settings = {**driver_address(master, launched_conf(master, settings)), **settings}
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def connector_auth(endpoint: Endpoint) -> dict[str, str]:
    """The connector's credential settings: the role and its password file's path, never the file's content."""
    if not endpoint.username:
        return {}
    if endpoint.password_file:
        return {"spark.cassandra.auth.conf.factory": AUTH_FACTORY,
                "spark.casstor.auth.username": endpoint.username,
                "spark.casstor.auth.passwordFile": endpoint.password_file}
    return {"spark.cassandra.auth.username": endpoint.username,
            "spark.cassandra.auth.password": endpoint.password or ""}


def connector_tls(endpoint: Endpoint) -> dict[str, str]:
    """The connector's TLS settings: a truststore derived from the endpoint's CA file."""
    if not endpoint.ssl_ca:
        return {}
    prefix = "spark.cassandra.connection.ssl"
    return {f"{prefix}.enabled": "true",
            f"{prefix}.trustStore.path": str(truststore_for(endpoint.ssl_ca)),
            f"{prefix}.trustStore.type": "PKCS12",
            f"{prefix}.trustStore.password": TRUSTSTORE_PASSWORD,
            f"{prefix}.enabledAlgorithms": ",".join(CIPHER_SUITES)}


def launched_conf(master: str | None, settings: dict[str, str]) -> SparkConf:
    """Spark's configuration as the driver's JVM has it: spark-submit's ``--master`` and ``--conf``,
    ``spark-defaults.conf``.

    Until a JVM exists pyspark's ``SparkConf()`` is an empty dict of its own,
    so this attaches to the JVM first: spark-submit's (it started this
    process), or one started here with ``master`` and ``settings``, as
    ``getOrCreate`` would start it.
    """
    if SparkContext._jvm is None:
        launch = SparkConf(loadDefaults=False).setAll(settings.items())
        SparkContext._ensure_initialized(conf=launch.setMaster(master) if master else launch)
    return SparkConf()


def driver_address(master: str | None, spark_conf: SparkConf) -> dict[str, str]:
    """``spark.driver.host``/``bindAddress`` 127.0.0.1 when every executor is on this machine, else nothing.

    ``spark_conf``: :func:`launched_conf` (an empty SparkConf would hide spark-submit's master).
    Example: ``driver_address("spark://10.0.0.5:7077", conf)`` -> ``{}``;
    ``driver_address(None, conf)`` with spark-submit's ``--master local[2]`` -> loopback.
    """
    if spark_conf.contains("spark.driver.host"):
        return {}
    effective = master or spark_conf.get("spark.master", "local[*]")
    on_this_machine = effective.startswith("local") or urlsplit(effective).hostname in (LOOPBACK, "localhost")
    return {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK} if on_this_machine else {}


def read_table(spark: SparkSession, keyspace: str, table: str) -> DataFrame:
    """A table as a DataFrame, split by token range across tasks."""
    return spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table).load()
