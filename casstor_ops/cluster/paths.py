"""Where casstor keeps things, and the pinned versions of what it installs.

Three places, none inside the git tree:

* the cache (``$CASSTOR_CACHE``, default ``~/.cache/casstor``): downloaded
  Cassandra jars, the cassandra-stress distribution, the Ivy cache of the
  Spark Cassandra Connector (``make setup`` fills these), and S3Proxy's jars
  (fetched by the first test that needs an S3 server). Safe to delete.
* the home (``$CASSTOR_HOME``, default ``~/.local/share/casstor``): node
  data, logs, pid files of the local cluster. Deleting it deletes the store.
* the project's ``plots/`` (figures) and ``bench/results/`` (raw numbers).

Directories that hold node data, logs, certificates or passwords are made
with :func:`private_dir`: 0700 whatever the umask.

Example::

    >>> cassandra_lib_dir().name
    'lib'
"""

from __future__ import annotations

import os
from pathlib import Path

CASSANDRA_VERSION = "5.0.9"
STRESS_DIST = "org.apache.cassandra:apache-cassandra:4.0-alpha2:tar.gz:bin"
STRESS_DIR_NAME = "apache-cassandra-4.0-alpha2"
JAXB_API = "javax.xml.bind:jaxb-api:2.3.1"
SPARK_CONNECTOR = "com.datastax.spark:spark-cassandra-connector_2.12:3.5.1"
S3PROXY_VERSION = "2.6.0"  # a real S3 server for the tests of s3:// URLs (not part of make setup: 43 MB)


def cache_dir() -> Path:
    return Path(os.environ.get("CASSTOR_CACHE") or Path.home() / ".cache" / "casstor")


def home_dir() -> Path:
    return Path(os.environ.get("CASSTOR_HOME") or Path.home() / ".local" / "share" / "casstor")


def cassandra_lib_dir() -> Path:
    return cache_dir() / f"cassandra-{CASSANDRA_VERSION}" / "lib"


def stress_home() -> Path:
    return cache_dir() / STRESS_DIR_NAME


def s3proxy_lib_dir() -> Path:
    return cache_dir() / f"s3proxy-{S3PROXY_VERSION}" / "lib"


def ivy_dir() -> Path:
    return cache_dir() / "ivy"


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def private_dir(path: Path) -> Path:
    """``path`` and its missing parents created, ``path`` itself set to 0700 (whatever the umask); ``path``.

    Example: ``private_dir(home / "node1" / "logs")``. Failures: the OSError
    of ``mkdir``/``chmod`` (e.g. a file in the way) propagates.
    """
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path
