"""File ID checks (store.api.check_id): IDs that restore to the same path, or break one-line output, are refused
when stored; IDs already stored stay readable and removable."""

from __future__ import annotations

import pytest

from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.store.api import check_id


@pytest.mark.parametrize("file_id", ["a//b", "a/./b", "a/../b", "a/b/", "/a/b", "/a", ".", "..", "./a", "a/..",
                                     "/", "a///"])
def test_path_aliases_are_refused_when_storing(file_id) -> None:
    """Injects IDs that restore onto another ID's path (doubled, leading or trailing '/', '.' or '..' segments);
    checks a one-line usage error that says why."""
    with pytest.raises(CasstorError) as caught:
        check_id(file_id, storing=True)
    assert caught.value.exit_code == EXIT_USAGE
    message = str(caught.value)
    assert message.startswith(f"file ID {file_id!r}: empty, '.' and '..' path segments are refused")
    assert "\n" not in message


@pytest.mark.parametrize("file_id, shown", [
    ("a\nb", r"'\n'"), ("a\rb", r"'\r'"), ("tab\there", r"'\t'"), ("esc\x1b[31m", r"'\x1b'"),
    ("del\x7f", r"'\x7f'"), ("c1\x85", r"'\x85'"),
])
def test_control_characters_are_refused_when_storing(file_id, shown) -> None:
    """Injects newlines, tabs, escapes, DEL and C1 controls; checks one line naming the character (escaped)."""
    with pytest.raises(CasstorError) as caught:
        check_id(file_id, storing=True)
    assert caught.value.exit_code == EXIT_USAGE
    message = str(caught.value)
    assert "contains a control character" in message and message.endswith(shown) and "\n" not in message


def test_lone_surrogate_is_refused_when_storing() -> None:
    """Injects an ID with an undecodable argv byte (a lone surrogate, which the driver cannot encode);
    checks a usage error instead of a UnicodeEncodeError traceback."""
    with pytest.raises(CasstorError, match="lone surrogate"):
        check_id(b"caf\xe9".decode("utf-8", "surrogateescape"), storing=True)


@pytest.mark.parametrize("file_id", ["a/b", "a", "a/b/c.txt", "..a/b..", ".hidden/.x", "a b/ c ", "naïve/日本語",
                                     "it's \"quoted\"", "'; DROP TABLE files; --", "a\u00a0b", "👩\u200d💻", "a\\b"])
def test_plain_ids_are_accepted(file_id) -> None:
    """Injects IDs with dots inside names, spaces, quotes, non-ASCII, NBSP, a ZWJ emoji and a backslash;
    checks each is returned unchanged."""
    assert check_id(file_id, storing=True) == file_id


@pytest.mark.parametrize("file_id", ["a//b", "/a", "a/b/", "a\nb"])
def test_existing_ids_stay_addressable(file_id) -> None:
    """Injects refused-for-storing IDs into the read/remove check; checks they pass, so old files can be removed."""
    assert check_id(file_id) == file_id


@pytest.mark.parametrize("file_id", ["", None, "a\x00b"])
def test_empty_or_nul_ids_are_always_refused(file_id) -> None:
    """Injects an empty ID, a non-string and a NUL; checks a usage error with or without storing."""
    for storing in (False, True):
        with pytest.raises(CasstorError) as caught:
            check_id(file_id, storing=storing)
        assert caught.value.exit_code == EXIT_USAGE


def test_a_new_id_over_1024_bytes_is_refused_and_an_old_one_stays_addressable() -> None:
    """Injects IDs of 1,025 and 2,000 UTF-8 bytes (``é`` is two) and one over Cassandra's 65,535-byte key limit;
    checks a usage error when storing, the first two still pass the read/remove check (stored before the rule),
    and the last is refused for every command (no store can hold it)."""
    assert check_id("k" * 1024, storing=True) == "k" * 1024
    for file_id in ("k" * 1025, "é" * 1000):
        with pytest.raises(CasstorError) as caught:
            check_id(file_id, storing=True)
        assert caught.value.exit_code == EXIT_USAGE and "at most 1024" in str(caught.value)
        assert check_id(file_id) == file_id
    with pytest.raises(CasstorError) as caught:
        check_id("k" * 65536)
    assert caught.value.exit_code == EXIT_USAGE
