"""Spark jobs that failed because an executor is not set up for casstor: one line, not a Java stack trace.

A bulk task catches the failures of its own files (see
:mod:`casstor_ops.spark.bulk_tasks`), but a task that cannot even start on
an executor fails the whole Spark job with a ``Py4JJavaError``: its message
is Spark's "Job aborted due to stage failure" with the executor's Python
traceback and dozens of Java frames. When that traceback says the
executor's Python is the problem, :func:`setup_error` turns it into one
:class:`~casstor_ops.errors.CasstorError` that names the cause and the fix:

* its Python cannot import a module the task needs (``casstor_ops``, or a
  dependency such as ``cassandra`` or ``fsspec``): casstor is not
  installed in the Python that ``spark.pyspark.python`` /
  ``PYSPARK_PYTHON`` names on the workers;
* its Python is another minor version than the driver's (PySpark refuses it);
* the workers cannot run that Python at all (no such file).

Any other failure is a bug or Spark's own and keeps its traceback.

Example (what :func:`casstor_ops.spark.job_runner.run_job` does with a job's ``Py4JJavaError``)::

    >>> print(setup_error(err))                             # doctest: +SKIP
    the executors' Python cannot import 'casstor_ops' (ModuleNotFoundError on executor tasks): ...
"""

from __future__ import annotations

import re

from casstor_ops.errors import CasstorError

_FIX = ("install casstor and its dependencies in the Python that spark.pyspark.python (or PYSPARK_PYTHON) "
        "names on every worker, or ship a packed environment with --archives (see docs/spark.md)")
_CAUSES = [
    (re.compile(r"ModuleNotFoundError: No module named '([^']+)'"),
     "the executors' Python cannot import {0!r} (ModuleNotFoundError in the Spark tasks): " + _FIX),
    # PySpark writes the worker's version as a tuple: "(3, 10) than that in driver 3.11".
    (re.compile(r"Python in worker has different version \(?(\d+), ?(\d+)\)? than that in driver ([\d.]+)"),
     "the executors' Python is version {0}.{1}, the driver's {2}: PySpark needs the same minor version; " + _FIX),
    (re.compile(r'Cannot run program "([^"]+)"'),
     "the executors cannot run the Python {0!r} (spark.pyspark.python / PYSPARK_PYTHON): " + _FIX),
]


def setup_error(err: BaseException) -> CasstorError | None:
    """The one-line error for a Spark job that failed because of the executors' Python, else None.

    Example::

        >>> print(setup_error(Exception("... ModuleNotFoundError: No module named 'casstor_ops' ...")))  # doctest: +SKIP
        the executors' Python cannot import 'casstor_ops' (ModuleNotFoundError in the Spark tasks): install ...
    """
    text = str(err)
    for pattern, message in _CAUSES:
        found = pattern.search(text)
        if found:
            return CasstorError(message.format(*found.groups()))
    return None
