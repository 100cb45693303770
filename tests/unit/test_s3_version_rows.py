"""The S3 view of a key's version rows (casstor_ops.serve.s3.version_rows, and where a version listing goes on): pure
functions, no node."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from cassandra.util import uuid_from_time

from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.version_rows import is_null_write, matching, name, replaced, visible
from casstor_ops.serve.s3.versions import _after_version


def _row(at: float, null: bool = False, deleted: bool = False) -> SimpleNamespace:
    return SimpleNamespace(version=uuid_from_time(at), null_version=null, deleted=deleted)


def test_null_rows_are_named_null_and_only_the_newest_is_shown():
    rows = [_row(5, null=True), _row(4), _row(3, null=True, deleted=True), _row(2, null=True)]  # newest first
    assert [name(r) for r in rows[:2]] == ["null", str(rows[1].version)]
    assert visible(rows, "Suspended") == rows[:2]
    assert replaced(rows) == rows[2:]
    assert matching(rows, "null") == [rows[0], rows[2], rows[3]]
    assert matching(rows, str(rows[1].version)) == [rows[1]]
    assert matching(rows, str(uuid_from_time(9))) == []


def test_a_bucket_never_versioned_shows_no_delete_marker():
    rows = [_row(3, null=True, deleted=True), _row(2, null=True)]
    assert visible(rows, None) == [] and visible(rows, "Enabled") == rows[:1]
    assert is_null_write(None) and is_null_write("Suspended") and not is_null_write("Enabled")


def test_a_malformed_version_id_is_no_such_version():
    for text in ("nope", str(uuid.uuid4())):
        with pytest.raises(S3Error) as err:
            matching([], text)
        assert err.value.code == "NoSuchVersion"


def test_a_version_listing_goes_on_after_its_marker_or_a_dropped_markers_time():
    rows = [_row(5), _row(4, null=True), _row(3), _row(2)]  # newest first, as shown
    assert _after_version(rows, str(rows[0].version)) == rows[1:]
    assert _after_version(rows, "null") == rows[2:]
    dropped = str(uuid_from_time(3.5))  # a version between rows 1 and 2, dropped since the page that ended on it
    assert _after_version(rows, dropped) == rows[2:]
    assert _after_version(rows[2:], "null") == rows[2:]  # a null version dropped: its time is unknown, all of them
