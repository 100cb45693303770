"""Spark jobs that failed on a Cassandra request of the connector (Java driver): one line, not a Java stack trace.

The Python driver's failures are one line already (``casstor: Cassandra
request failed: …``, :func:`casstor_ops.errors.run_reporting_errors`); the
connector's reach the job as a ``Py4JJavaError`` wrapping Spark's "Job
aborted due to stage failure" and dozens of frames. :func:`connector_error`
finds the Java driver's exception in it and says the same in one line, with
the likely cause where there is one: a *read failure* (a replica answered
with an error, not a timeout) is what a damaged SSTable gives, since the
node refuses a chunk whose checksum fails and the coordinator does not try
another replica.

Example::

    >>> print(connector_error(Exception("... com.datastax.oss.driver.api.core.servererrors.ReadFailureException: "
    ...                                  "Cassandra failure during read query at consistency QUORUM ...")))  # doctest: +ELLIPSIS
    Cassandra request failed: ReadFailureException: Cassandra failure during read query at consistency QUORUM ...

Failures: none; anything it does not recognise gives None (the error keeps its traceback).
"""

from __future__ import annotations

import re

from casstor_ops.errors import READ_FAILURE_HINT, CasstorError

_JAVA_DRIVER_ERROR = re.compile(r"com\.datastax\.oss\.driver\.api\.core\.(?:[a-z]+\.)*([A-Z]\w*(?:Exception|Error)): "
                                r"([^\n]*)")
_HINTS = {"ReadFailureException": READ_FAILURE_HINT}


def connector_error(err: BaseException) -> CasstorError | None:
    """The one-line error for a Spark job that failed on the connector's Cassandra request, else None."""
    found = _JAVA_DRIVER_ERROR.search(str(err))
    if found is None:
        return None
    name, message = found.groups()
    hint = _HINTS.get(name)
    return CasstorError(f"Cassandra request failed: {name}: {message.strip()}" + (f"; {hint}" if hint else ""))
