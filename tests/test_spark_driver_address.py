"""The driver's address under spark-submit: decided by the master spark-submit was given, not by an empty SparkConf.

A real spark-submit (its JVM, its Python driver) runs a script that prints
the settings :func:`~casstor_ops.spark.session.spark_session` would add; no
SparkContext is made, so the master is never contacted and no node is needed.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .support import spark_submit

SCRIPT = """from casstor_ops.spark.session import driver_address, launched_conf
print("DRIVER", driver_address(None, launched_conf(None, {})))
"""


def test_a_remote_master_given_to_spark_submit_gets_no_loopback_driver(tmp_path: Path) -> None:
    """Injects: ``spark-submit --master spark://10.255.0.1:7077`` with nothing in casstor's own call naming the
    master. Checks: no loopback pin (that master's executors must reach the driver). The local masters' pin is
    checked by the unit tests of :func:`driver_address`, and used by every job test's ``--master local[2]``."""
    script = tmp_path / "driver_address.py"
    script.write_text(SCRIPT)
    code, output = spark_submit(str(script), master="spark://10.255.0.1:7077", timeout=300)
    assert code == 0, output
    printed = [line for line in output.splitlines() if line.startswith("DRIVER ")]
    assert printed and ast.literal_eval(printed[0].removeprefix("DRIVER ")) == {}, output
