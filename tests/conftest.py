"""Session fixtures: one real Cassandra node started through the launcher, one local Spark.

The test node lives under its own ``CASSTOR_HOME`` (a temporary directory)
and its own ports (CQL 19042, storage 17000, JMX 17199, each shifted by
``CASSTOR_TEST_PORT_OFFSET``), so it never touches
a developer's demo node on 9042. The environment variables are set for the
whole session, so ``casstor`` subprocesses started by tests find the same
node. The node is stopped at the end of the session.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from casstor_ops.cluster.connection import connect
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.schema import init_store

from .support import INLINE_MAX, SESSION_SETTINGS, TEST_PORTS, THREE_NODE_PORTS

pytest_plugins = ["tests.s3_support"]  # the S3 server and clients of every tests/test_s3*.py

# Every table a test may fill (emptied by ``empty_store``).
_TABLES = [(DATA_KS, "blocks"), (DATA_KS, "existing_blocks"), (DATA_KS, "block_claims"), (META_KS, "versions"),
           (META_KS, "dir_entries"), (META_KS, "directories"), (META_KS, "retention"), (META_KS, "snapshots"),
           (META_KS, "file_blocks"), (META_KS, "maintenance"), (META_KS, "writer_leases")]


# The tests' Spark JVMs (the session's local[2], every spark-submit, `casstor verify` and the like, the notebooks'
# kernels) live for seconds to a minute on small data, so C2's compiling costs them more than it pays back: with C1
# only, tests/test_maintenance_cli.py, test_verify.py and test_dedup_stats.py ran in 354 s instead of 408 s, and
# test_reclaim.py with test_notebook_01.py in 315 s instead of 349 s (2026-12-02). SPARK_SUBMIT_OPTS reaches only
# spark-submit's JVM: not the node, not cassandra-stress. A user's own setting wins.
_SPARK_JIT = ("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")


@pytest.fixture(scope="session", autouse=True)
def short_lived_spark_jvms() -> Iterator[None]:
    name, value = _SPARK_JIT
    own = name not in os.environ
    os.environ.setdefault(name, value)
    yield
    if own:
        os.environ.pop(name, None)


@pytest.fixture(scope="session")
def casstor_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("casstor-home")
    old = {k: os.environ.get(k) for k in ("CASSTOR_HOME", "CASSTOR_NODES", "CASSTOR_HEAP_MB")}
    os.environ["CASSTOR_HOME"] = str(home)
    os.environ.pop("CASSTOR_NODES", None)
    os.environ["CASSTOR_HEAP_MB"] = "1024"
    yield home
    for key, value in old.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def local_cluster(casstor_home: Path) -> LocalCluster:
    """The session's single real Cassandra node, started through the project's launcher."""
    cluster = LocalCluster(casstor_home / "cluster", ports=TEST_PORTS)
    cluster.start(nodes=1)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def cql(local_cluster: LocalCluster):
    """A driver session on the initialised test store (chunk sizes ``SESSION_SETTINGS``)."""
    session = connect(start=False)
    init_store(session, settings=SESSION_SETTINGS)
    yield session
    session.cluster.shutdown()


@pytest.fixture()
def empty_store(cql):
    """The test store with every table emptied (for tests that assert store-wide totals)."""
    _truncate_all(cql)
    return cql


def _truncate_all(cql) -> None:
    for ks, table in _TABLES:
        cql.execute(f"TRUNCATE {ks}.{table}")


@pytest.fixture()
def inline_store(empty_store):
    """The emptied test store keeping files of up to ``INLINE_MAX`` bytes inline; emptied again, and without
    inline files, after the test. (A real store fixes ``inline_max`` at init: the test store's row is changed
    under it, so a Store made in the test reads it.)"""
    st = Statements.for_session(empty_store)
    empty_store.execute(st.write_setting, ("inline_max", str(INLINE_MAX)))
    yield empty_store
    empty_store.execute(st.write_setting, ("inline_max", "0"))
    _truncate_all(empty_store)


@pytest.fixture(scope="session")
def spark(local_cluster: LocalCluster):
    """A local[2] SparkSession with the connector, pointed at the test node."""
    from casstor_ops.spark.session import spark_session

    session = spark_session("casstor-tests", master="local[2]", conf={"spark.ui.enabled": "false"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory: pytest.TempPathFactory) -> LocalCluster:
    """Three real nodes on 127.0.0.1-3 (768 MiB heap each), started one at a time; one cluster per module.

    Module scope, not session: a test may stop a node, and the next module
    must not inherit that.
    """
    cluster = LocalCluster(tmp_path_factory.mktemp("three-nodes") / "cluster", ports=THREE_NODE_PORTS, heap_mb=768)
    try:
        cluster.start(nodes=3)  # a node that fails to start must not leave the ones before it running
        yield cluster
    finally:
        cluster.stop()
