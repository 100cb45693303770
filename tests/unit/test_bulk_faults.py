"""Driver errors and bad prefixes in bulk jobs, without Cassandra or Spark: which fail one file, which end the job."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionBusy, ConnectionException
from pyspark.sql import types as T

from casstor_ops.cluster.connection import Endpoint
from casstor_ops.errors import EXIT_UNREACHABLE, EXIT_USAGE, CasstorError
from casstor_ops.store.bulk.tree_files import check_prefix
from casstor_ops.spark.bulk_tasks import BulkJob, result_row, result_schema
from casstor_ops.store.bulk.tree_files import outage

ENDPOINT = Endpoint(("127.0.0.1",), 19042, False)
REFUSED = NoHostAvailable("Unable to connect to any servers",
                          {"127.0.0.1:19042": ConnectionRefusedError(111, "Connection refused")})
DRIVER_ERRORS = {
    "NoHostAvailable": REFUSED,
    "ConnectionException": ConnectionException("Connection to 127.0.0.1 was closed"),
    "ConnectionBusy": ConnectionBusy("Connection to 127.0.0.1 is busy"),
    "OperationTimedOut": OperationTimedOut("errors={'127.0.0.1:19042': 'Client request timeout'}"),
}


def _raising(error: Exception) -> BulkJob[tuple[str, int]]:
    def work(store: Any, item: tuple[str, int], row: dict[str, Any], scope: Any) -> None:
        raise error

    return BulkJob("ingest", result_schema(T.StructField("new_bytes", T.LongType(), False)),
                   size=lambda item: item[1], describe=lambda item: dict(id=item[0], path=f"/src/{item[0]}"),
                   work=work)


@pytest.mark.parametrize("name", DRIVER_ERRORS)
def test_driver_errors_fail_one_file_with_one_line(name: str) -> None:
    """Injects each driver exception that is no DriverException subclass (and OperationTimedOut) into one
    file's work; checks a failed row with a one-line error naming it, where the job used to die with a traceback."""
    row, error = result_row(_raising(DRIVER_ERRORS[name]), None, ("a/x.bin", 10))
    assert error is DRIVER_ERRORS[name]
    assert (row["id"], row["status"]) == ("a/x.bin", "failed")
    assert row["error"] and "\n" not in row["error"]
    if name == "NoHostAvailable":  # str() of it is a tuple repr; the row says what happened
        assert row["error"] == ("NoHostAvailable: Unable to connect to any servers "
                                "(127.0.0.1:19042: Connection refused)")


def test_only_unreachable_hosts_are_an_outage() -> None:
    """Injects each driver error, an OSError and CasstorErrors into the outage check; checks that refused or
    closed connections to every host (and a store that could not connect, exit 6) count as the cluster
    being down, and that a busy connection, a timeout or a file's own error do not."""
    assert outage(REFUSED, ENDPOINT).exit_code == EXIT_UNREACHABLE
    assert outage(DRIVER_ERRORS["ConnectionException"], ENDPOINT).exit_code == EXIT_UNREACHABLE
    assert outage(CasstorError("cannot reach Cassandra", EXIT_UNREACHABLE), ENDPOINT) is not None
    for own in (DRIVER_ERRORS["ConnectionBusy"], DRIVER_ERRORS["OperationTimedOut"],
                NoHostAvailable("busy", {"h:1": ConnectionBusy("busy")}), PermissionError(13, "Permission denied"),
                CasstorError("no such file"), None):
        assert outage(own, ENDPOINT) is None, own


@pytest.mark.parametrize("prefix", ["/abs/", "data//", "./", "a/../", "tab\t/"])
def test_prefix_that_makes_invalid_ids_is_a_usage_error(prefix: str) -> None:
    """Injects --prefix values whose IDs the store refuses (leading '/', doubled '/', '.', '..', a control
    character); checks one usage error (exit 2) naming the prefix, raised before any file is tried."""
    with pytest.raises(CasstorError) as caught:
        check_prefix(prefix)
    assert caught.value.exit_code == EXIT_USAGE
    assert str(caught.value).startswith(f"prefix {prefix!r} cannot start a file ID") and "\n" not in str(caught.value)


@pytest.mark.parametrize("prefix", ["", "data/", "data", "naïve/x-", "caf\udce9/"])
def test_prefix_that_makes_valid_ids_is_kept(prefix: str) -> None:
    """Injects empty, nested, bare, non-ASCII and undecodable (escaped like names) prefixes; checks they pass."""
    assert check_prefix(prefix) == prefix
