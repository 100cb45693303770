"""What ``make setup`` leaves behind: tools that work from a plain shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from casstor_ops.cluster import paths as layout
from casstor_ops.cluster.install import spark_conf_dir

VENV_BIN = Path(sys.executable).parent


def test_spark_submit_runs_without_the_venv_on_path() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PATH"] = "/usr/bin:/bin"
    out = subprocess.run([str(VENV_BIN / "spark-submit"), "--version"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    assert "version 3.5" in out.stdout + out.stderr


def test_spark_defaults_name_the_connector_and_this_python() -> None:
    conf = (spark_conf_dir() / "spark-defaults.conf").read_text()
    assert "spark-cassandra-connector_2.12-3.5.1.jar" in conf
    assert f"spark.pyspark.python {sys.executable}" in conf


def test_server_and_stress_are_cached() -> None:
    assert (layout.cassandra_lib_dir() / f"cassandra-all-{layout.CASSANDRA_VERSION}.jar").exists()
    assert (layout.stress_home() / "tools" / "bin" / "cassandra-stress").exists()
    assert (layout.stress_home() / "tools" / "lib" / "jaxb-api-2.3.1.jar").exists()
