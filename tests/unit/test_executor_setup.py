"""A Spark job that failed because of the executors' Python becomes one line; other failures keep theirs."""

from __future__ import annotations

import pytest

from casstor_ops.spark.connector_errors import connector_error
from casstor_ops.spark.executor_setup import setup_error

# The tails of real Py4JJavaError messages (PySpark 3.5.9), trimmed.
_NO_CASSTOR = ("Job aborted due to stage failure: Task 1 in stage 0.0 failed 4 times ... "
               "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
               '  File "/x/pyspark.zip/pyspark/serializers.py", line 471, in loads\n'
               "ModuleNotFoundError: No module named 'casstor_ops'\n\n\tat org.apache.spark.api.python...")
_OTHER_VERSION = ("PythonException: [PYTHON_VERSION_MISMATCH] Python in worker has different version (3, 12) than "
                  "that in driver 3.11, PySpark cannot run with different minor versions.")
_NO_PYTHON = ('java.io.IOException: Cannot run program "/opt/env/bin/python": error=2, No such file or directory')


@pytest.mark.parametrize("message, says", [
    (_NO_CASSTOR, "the executors' Python cannot import 'casstor_ops'"),
    (_OTHER_VERSION, "the executors' Python is version 3.12, the driver's 3.11"),
    (_NO_PYTHON, "the executors cannot run the Python '/opt/env/bin/python'"),
])
def test_executor_setup_failures_are_one_line_with_the_fix(message: str, says: str) -> None:
    error = setup_error(Exception(message))
    assert str(error).startswith(says) and "spark.pyspark.python" in str(error) and "\n" not in str(error)
    assert error.exit_code == 1


def test_any_other_failure_is_not_explained() -> None:
    assert setup_error(Exception("PythonException: ... ZeroDivisionError: division by zero")) is None


def test_a_connector_read_failure_is_one_line_with_the_damaged_replica_hint() -> None:
    """The text of the Py4JJavaError a verify job got when a replica's SSTable was damaged (tests/test_faults_sstable.py)."""
    text = ("An error occurred while calling o122.collectToPython.\n: org.apache.spark.SparkException: Job aborted due "
            "to stage failure: Task 5 in stage 0.0 failed 1 times, most recent failure: Lost task 5.0 in stage 0.0 "
            "(TID 5) (192.0.2.2 executor driver): com.datastax.oss.driver.api.core.servererrors.ReadFailureException: "
            "Cassandra failure during read query at consistency QUORUM (2 responses were required but only 0 replica "
            "responded, 1 failed)\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages")
    error = connector_error(Exception(text))
    assert str(error) == (
        "Cassandra request failed: ReadFailureException: Cassandra failure during read query at consistency QUORUM "
        "(2 responses were required but only 0 replica responded, 1 failed); a replica failed the read: if a node's "
        "system.log has a CorruptSSTableException, one of its SSTables is damaged (docs/operations.md, 'A damaged "
        "replica')")
    assert connector_error(Exception("java.lang.OutOfMemoryError: Java heap space")) is None
