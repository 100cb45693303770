"""The statement registry without Cassandra: lazy, once per session, per-statement settings kept."""

from __future__ import annotations

import gc
import weakref
import threading
import time
from dataclasses import dataclass, field

from cassandra import ConsistencyLevel

from casstor_ops.store.coordination.reclaim_window import current_window
from casstor_ops.store.cql.statements import Statements


@dataclass
class FakeStatement:
    cql: str
    consistency_level: int | None = None


class FakeSession:
    """Records what is prepared and executed; every query finds no row."""

    def __init__(self, prepare_delay_s: float = 0.0) -> None:
        self.prepared: list[str] = []
        self.executed: list[tuple[FakeStatement, tuple]] = []
        self._delay = prepare_delay_s

    def prepare(self, cql: str) -> FakeStatement:
        self.prepared.append(cql)
        time.sleep(self._delay)  # widens the window in which two threads could both prepare
        return FakeStatement(cql)

    def execution_profile_clone_update(self, profile: object, **changes: object) -> dict:
        return dict(changes)

    def execute(self, statement: FakeStatement, params: tuple) -> "FakeResult":
        self.executed.append((statement, params))
        return FakeResult()


@dataclass
class FakeResult:
    rows: list = field(default_factory=list)

    def one(self) -> None:
        return None


def test_nothing_is_prepared_until_used_then_once() -> None:
    session = FakeSession()
    st = Statements.for_session(session)
    assert session.prepared == []
    first = st.head
    assert st.head is first and Statements.for_session(session).head is first
    assert session.prepared == [first.cql] and first.cql.endswith("FROM casstor_meta.versions WHERE id = ? LIMIT 1")


def test_a_store_prepares_only_what_it_uses() -> None:
    session = FakeSession()
    st = Statements.for_session(session)
    for _ in range(3):
        st.existing, st.insert_block, st.insert_existing
    assert len(session.prepared) == 3
    assert not any("USING TIMESTAMP" in cql or "maintenance" in cql for cql in session.prepared)


def test_concurrent_first_use_prepares_once() -> None:
    session = FakeSession(prepare_delay_s=0.05)
    st = Statements.for_session(session)
    barrier = threading.Barrier(8)
    seen = []

    def use() -> None:
        barrier.wait()
        seen.append(st.delete_index_at)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(session.prepared) == 1 and all(s is seen[0] for s in seen)


def test_two_sessions_get_two_registries() -> None:
    one, two = FakeSession(), FakeSession()
    assert Statements.for_session(one) is not Statements.for_session(two)
    assert Statements.for_session(one).setting is not Statements.for_session(two).setting
    assert len(one.prepared) == len(two.prepared) == 1


def test_the_registry_goes_with_its_session() -> None:
    session = FakeSession()
    registry = weakref.ref(Statements.for_session(session))
    registry().head
    del session
    gc.collect()
    # Counting the cache instead would also count other tests' sessions that this collection frees.
    assert registry() is None


def test_the_window_read_is_serial_and_the_settings_record_quorum() -> None:
    session = FakeSession()
    assert current_window(session) is None
    (statement, params), = session.executed
    assert params == ("reclaim",) and statement.cql.startswith("SELECT holder, mode, state, since FROM")
    assert statement.consistency_level == ConsistencyLevel.SERIAL
    st = Statements.for_session(session)
    assert st.record_setting.consistency_level == ConsistencyLevel.QUORUM
    assert st.head.consistency_level is None  # the session's consistency (CASSTOR_CONSISTENCY)


def test_a_delete_marker_binds_every_column_of_an_s3_version_row() -> None:
    """A delete marker of an S3 object (``catalog.mark_removed``) is written through ``commit.write_version`` as a
    commit's row is: every value ``insert_version_meta`` names is bound, the S3 columns from an empty
    ``ObjectMeta`` (before, the marker listed its S3 columns by hand, and a new one could be left out)."""
    from casstor_ops.store.engine.catalog import mark_removed

    class Namespace:
        def publish(self, file: object, deleted: bool = False) -> None:
            self.published = (file, deleted)

    session = FakeSession()
    statements = Statements.for_session(session)
    mark_removed(session, statements, Namespace(), "b/k", null_version=True)
    statement, values = session.executed[-1]
    assert statement.cql == Statements.insert_version_meta.cql
    assert len(values) == statement.cql.count("?")
    assert values[-2] is True and values[13] is True  # null_version, then deleted (a marker)
