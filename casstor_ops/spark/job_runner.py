"""Running a ``jobs/*.py`` entry point: errors as one line and an exit code.

A job is a function ``(args, spark) -> int``; this wraps it the way
:mod:`casstor_ops.cli.main` wraps commands, so ``spark-submit jobs/X.py`` with
bad input prints ``casstor: <message>`` and exits non-zero, never a
Python traceback, and always stops its SparkSession. A Spark job that failed
because the executors' Python cannot run casstor
(:mod:`casstor_ops.spark.executor_setup`), or on a Cassandra request of the
connector (:mod:`casstor_ops.spark.connector_errors`), is one line too.

Example (``jobs/dedup_stats.py``)::

    def main(args, spark):
        ...
        return 0

    if __name__ == "__main__":
        run_job(main, parser, app_name="casstor-dedup-stats")
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Callable, Iterator, NoReturn

from py4j.protocol import Py4JJavaError

from casstor_ops.errors import run_reporting_errors
from casstor_ops.spark.connector_errors import connector_error
from casstor_ops.spark.executor_setup import setup_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@contextlib.contextmanager
def explained() -> Iterator[None]:
    """Raise the one-line error that explains a ``Py4JJavaError`` (the executors' set-up, then the connector's
    Cassandra request); let any other error through with its traceback."""
    try:
        yield
    except Py4JJavaError as err:
        explanation = setup_error(err) or connector_error(err)
        if explanation is None:
            raise
        raise explanation from None


def run_job(main: Callable[[argparse.Namespace, "SparkSession"], int],
            parser: argparse.ArgumentParser, app_name: str, argv: list[str] | None = None) -> NoReturn:
    """Parse the arguments, then build the SparkSession, run ``main`` and exit with its status.

    Parsing comes first, so a usage error (one line and exit 2 with
    :class:`~casstor_ops.cli.args.OneLineParser`) never starts Spark. Errors
    of ``main`` are reported by :func:`~casstor_ops.errors.run_reporting_errors`.
    """
    args = parser.parse_args(argv)
    spark = None

    def job() -> int:
        nonlocal spark
        from casstor_ops.spark.session import spark_session

        spark = spark_session(app_name)
        with explained():
            return main(args, spark)

    try:
        code = run_reporting_errors(job)
    finally:
        if spark is not None:
            spark.stop()
    sys.exit(code)
