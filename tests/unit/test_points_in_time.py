"""Point in time without a node: reading ``--at`` and ``--version``, and the diff of two trees."""

import uuid
from datetime import datetime, timezone

import pytest

from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.serve.reads import wanted_version
from casstor_ops.store.history.points_in_time import compare, parse_time, parse_version
from casstor_ops.store.records import FileInfo


def _file(file_id: str, content: bytes, size: int | None = None) -> FileInfo:
    return FileInfo(file_id, uuid.uuid1(), len(content) if size is None else size, content.ljust(32, b"\0"), 1, None)


@pytest.mark.parametrize("text, expected", [
    ("2026-11-26T14:00:00", datetime(2026, 11, 26, 14, tzinfo=timezone.utc)),
    ("2026-11-26T14:00:00Z", datetime(2026, 11, 26, 14, tzinfo=timezone.utc)),
    ("2026-11-26T15:00:00+01:00", datetime(2026, 11, 26, 14, tzinfo=timezone.utc)),
    ("2026-11-26 14:00:00.250", datetime(2026, 11, 26, 14, 0, 0, 250_000, tzinfo=timezone.utc)),
    ("2026-11-26", datetime(2026, 11, 26, tzinfo=timezone.utc)),
])
def test_a_time_is_iso_8601_and_utc_without_a_zone(text, expected) -> None:
    assert parse_time(text) == expected and parse_time(text).utcoffset() is not None


@pytest.mark.parametrize("text", ["yesterday", "", "2026-13-01", "1700000000"])
def test_a_bad_time_is_a_one_line_usage_error(text) -> None:
    with pytest.raises(CasstorError) as caught:
        parse_time(text)
    assert caught.value.exit_code == EXIT_USAGE and "\n" not in str(caught.value) and repr(text) in str(caught.value)


def test_a_version_is_a_time_uuid() -> None:
    version = uuid.uuid1()
    assert parse_version(str(version)) == version
    for bad in ("v1", str(uuid.uuid4()), ""):
        with pytest.raises(CasstorError) as caught:
            parse_version(bad)
        assert caught.value.exit_code == EXIT_USAGE


def test_a_get_names_a_version_or_a_time_not_both() -> None:
    version = uuid.uuid1()
    assert wanted_version({}) == (None, None)
    assert wanted_version({"version": str(version)}) == (version, None)
    assert wanted_version({"at": "2026-11-26T14:00:00Z"})[1] == datetime(2026, 11, 26, 14, tzinfo=timezone.utc)
    for query in ({"version": str(version), "at": "2026-11-26"}, {"at": "soon"}, {"version": "1"}):
        with pytest.raises(CasstorError) as caught:
            wanted_version(query)
        assert caught.value.exit_code == EXIT_USAGE


def test_compare_finds_added_removed_and_changed_files_by_hash() -> None:
    kept, same_again = _file("d/kept", b"k"), _file("d/kept", b"k")  # a new version of the same content: no change
    before = {"d/kept": kept, "d/gone": _file("d/gone", b"g", 10), "d/edited": _file("d/edited", b"old", 7)}
    after = {"d/kept": same_again, "d/new": _file("d/new", b"n", 20), "d/edited": _file("d/edited", b"new", 9)}
    diff = compare(before, after)
    assert [f.id for f in diff.added] == ["d/new"] and [f.id for f in diff.removed] == ["d/gone"]
    assert [(b.id, b.size, a.size) for b, a in diff.changed] == [("d/edited", 7, 9)]
    assert diff.totals() == {"added": 1, "added_bytes": 20, "removed": 1, "removed_bytes": 10,
                             "changed": 1, "changed_bytes": 9}
    assert [line.split()[0] for line in diff.lines()] == ["M", "-", "+"]  # in ID order: edited, gone, new
    as_json = diff.as_dict()
    assert as_json["changed"][0]["from"]["size"] == 7 and as_json["added"][0]["hash"] == after["d/new"].hash.hex()
    assert "1 added (20 bytes), 1 removed (10 bytes), 1 changed (9 bytes now)" in diff.summary()


def test_compare_of_equal_or_empty_trees_is_empty() -> None:
    tree = {"a": _file("a", b"a"), "b": _file("b", b"b")}
    assert compare(tree, dict(tree)).empty and compare({}, {}).empty
    assert [f.id for f in compare({}, tree).added] == ["a", "b"]
    assert [f.id for f in compare(tree, {}).removed] == ["a", "b"]
