"""Reading the store's settings: only a missing table or missing rows is "not initialised"; a refused permission,
a timeout or an unreachable cluster each say so with their own exit code; anything else keeps its traceback.
Driver exceptions are constructed, no node is used."""

from __future__ import annotations

from collections import namedtuple

import pytest
from cassandra import InvalidRequest, OperationTimedOut, ReadTimeout, Unauthorized
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionShutdown

from casstor_ops.cluster.connection import Endpoint, connect_error
from casstor_ops.errors import EXIT_NOT_INITIALISED, EXIT_TIMEOUT, EXIT_UNAUTHORISED, EXIT_UNREACHABLE, CasstorError
from casstor_ops.store.schema import StoreSettings, read_settings, require_settings

REMOTE = Endpoint(("10.0.0.1",), 9042, False, username="app")
READING = "read the store's settings"
DENIED = Unauthorized("Error from server: code=2100 [Unauthorized] message=\"User app has no SELECT permission "
                      "on <table casstor_meta.settings> or any of its parents\"")
Row = namedtuple("Row", "name value")


class FakeCluster:
    contact_points = ["10.0.0.9"]
    port = 9042


class FakeSession:
    """Prepares anything; the settings table exists when ``table`` is true (else reading it is refused as by a
    node: InvalidRequest), the read returns ``rows`` or raises ``failure``."""

    def __init__(self, rows: list[Row] | None = None, failure: Exception | None = None, table: bool = True) -> None:
        self.cluster = FakeCluster()
        self._rows, self._failure, self._table = rows or [], failure, table

    def prepare(self, cql: str) -> str:
        return cql

    def execution_profile_clone_update(self, profile: object, **changes: object) -> dict:
        return dict(changes)

    def execute(self, cql: str, params: tuple = ()) -> "FakeResult":
        if "system_schema.tables" in cql:
            return FakeResult([("settings",)] if self._table else [])
        if not self._table:
            raise InvalidRequest("Error from server: code=2200 [Invalid query] message=\"table settings does not exist\"")
        if self._failure is not None:
            raise self._failure
        return FakeResult(self._rows)


class FakeResult(list):
    def one(self):
        return self[0] if self else None


@pytest.mark.parametrize("failure, code, start", [
    (DENIED, EXIT_UNAUTHORISED, "not authorised to read the store's settings: "),
    (NoHostAvailable("Unable to complete the operation against any hosts", {"10.0.0.1:9042": DENIED}),
     EXIT_UNAUTHORISED, "not authorised to read the store's settings: "),
    (ReadTimeout("Error from server: code=1200 [Coordinator node timed out waiting for replica nodes' responses]"),
     EXIT_TIMEOUT, "Cassandra at 10.0.0.1:9042 did not answer in time to read the store's settings: "),
    (OperationTimedOut(errors={"10.0.0.1:9042": "Client request timeout"}),
     EXIT_TIMEOUT, "Cassandra at 10.0.0.1:9042 did not answer in time to read the store's settings: "),
    (NoHostAvailable("Unable to complete the operation against any hosts", {}),
     EXIT_UNREACHABLE, "cannot reach Cassandra at 10.0.0.1:9042: no host is up; "),
    (NoHostAvailable("Unable to complete the operation against any hosts",
                     {"10.0.0.1:9042": ConnectionShutdown("Connection to 10.0.0.1:9042 was closed")}),
     EXIT_UNREACHABLE, "cannot reach Cassandra at 10.0.0.1:9042: "),
])
def test_request_failures_are_classified(failure, code, start) -> None:
    """Injects a refused permission (bare or per host), a coordinator and a client timeout, every host down and
    a closed connection during a request; checks each one's exit code and the start of its one line."""
    error = connect_error(failure, REMOTE, READING)
    assert error is not None and error.exit_code == code
    assert str(error).startswith(start) and "\n" not in str(error)


def test_permission_refused_names_the_role() -> None:
    """Injects Unauthorized; checks the line names the role to grant the permission to."""
    assert "grant the role app the permission" in str(connect_error(DENIED, REMOTE, READING))


@pytest.mark.parametrize("failure, code, start", [
    (DENIED, EXIT_UNAUTHORISED, "not authorised to read the store's settings: "),
    (ReadTimeout("Error from server: code=1200 [Coordinator node timed out waiting for replica nodes' responses]"),
     EXIT_TIMEOUT, "Cassandra at 10.0.0.9:9042 did not answer in time"),
    (NoHostAvailable("Unable to complete the operation against any hosts", {}), EXIT_UNREACHABLE,
     "cannot reach Cassandra at 10.0.0.9:9042: no host is up"),
])
def test_read_settings_says_what_failed_not_uninitialised(failure, code, start) -> None:
    """Injects each failure into the settings read (each used to be 'the store is not initialised'); checks
    require_settings raises that failure's own line and code, naming the session's contact points."""
    with pytest.raises(CasstorError) as caught:
        require_settings(FakeSession(failure=failure))
    assert caught.value.exit_code == code and str(caught.value).startswith(start)


def test_an_unknown_failure_keeps_its_traceback() -> None:
    """Injects an InvalidRequest and a plain bug into the settings read; checks each propagates as itself."""
    for failure in (InvalidRequest("Undefined column name value"), TypeError("a bug")):
        with pytest.raises(type(failure)):
            read_settings(FakeSession(failure=failure))


@pytest.mark.parametrize("session", [FakeSession(table=False), FakeSession(rows=[])], ids=["no table", "no rows"])
def test_missing_table_or_rows_is_not_initialised(session) -> None:
    """Injects a keyspace without the settings table and an empty settings table; checks 'not initialised' with
    EXIT_NOT_INITIALISED."""
    assert read_settings(session) is None
    with pytest.raises(CasstorError, match=r"^the store is not initialised: run 'casstor init'$") as caught:
        require_settings(session)
    assert caught.value.exit_code == EXIT_NOT_INITIALISED


def test_recorded_settings_are_read() -> None:
    rows = [Row(name, value) for name, value in StoreSettings().as_rows().items()]
    assert read_settings(FakeSession(rows=rows)) == StoreSettings()
