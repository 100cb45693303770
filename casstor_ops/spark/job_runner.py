"""Running a ``jobs/*.py`` entry point: errors as one line and an exit code.

A job is a function ``(args, spark) -> int``; this wraps it the way
:mod:`casstor_ops.cli.main` wraps commands, so ``spark-submit jobs/X.py`` with
bad input prints ``casstor: <message>`` and exits non-zero, never a
Python traceback, and always stops its SparkSession. A Spark job that failed
because the executors' Python cannot run casstor
(:mod:`casstor_ops.spark.executor_setup`), or on a Cassandra request of the
connector (:mod:`casstor_ops.spark.connector_errors`), is one line too.
``casstor reclaim``, ``verify`` and ``report`` run the same job functions in
their own process with :func:`run_in_session`.

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


def run_in_session(main: Callable[[argparse.Namespace, "SparkSession"], int], args: argparse.Namespace,
                   app_name: str, master: str | None = None) -> int:
    """Build the SparkSession, run ``main`` on it and stop it; ``main``'s exit status.

    ``master`` None keeps the one Spark was given (:func:`~casstor_ops.spark.session.spark_session`).
    A ``Py4JJavaError`` that has an explanation is raised as that one-line :class:`~casstor_ops.errors.CasstorError`.
    """
    from casstor_ops.spark.session import spark_session

    spark = None
    try:
        spark = spark_session(app_name, master)
        with explained():
            return main(args, spark)
    finally:
        if spark is not None:
            spark.stop()


def run_job(main: Callable[[argparse.Namespace, "SparkSession"], int],
            parser: argparse.ArgumentParser, app_name: str, argv: list[str] | None = None) -> NoReturn:
    """Parse the arguments, then build the SparkSession, run ``main`` and exit with its status.

    Parsing comes first, so a usage error (one line and exit 2 with
    :class:`~casstor_ops.cli.args.OneLineParser`) never starts Spark. Errors
    of ``main`` are reported by :func:`~casstor_ops.errors.run_reporting_errors`.
    """
    args = parser.parse_args(argv)
    sys.exit(run_reporting_errors(lambda: run_in_session(main, args, app_name)))
