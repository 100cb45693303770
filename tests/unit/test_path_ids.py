"""Non-UTF-8 file names as IDs and back (store.path_ids): lossless, collision-free, valid IDs."""

from __future__ import annotations

import os
import random

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.store.trees.path_ids import id_to_path, path_to_id
from casstor_ops.store.api import check_id


def test_undecodable_byte_is_escaped_and_restored_to_the_same_bytes() -> None:
    """Injects b"caf\\xe9.txt" (Latin-1, invalid UTF-8) as os returns it; checks a valid ID that maps back to the
    same bytes, where the raw name was refused by the store (a lone surrogate)."""
    name = os.fsdecode(b"dir/caf\xe9.txt")
    file_id = path_to_id(name)
    assert file_id == "dir/caf\ufffdE9.txt"
    assert check_id(file_id, storing=True) == file_id
    assert os.fsencode(id_to_path(file_id)) == b"dir/caf\xe9.txt"


@pytest.mark.parametrize("name", ["plain/a.txt", "naïve/日本語", "100%.txt", "\ufffd", "a\ufffd.txt", "\ufffdZZ"])
def test_valid_names_without_an_escape_look_alike_are_their_own_id(name: str) -> None:
    """Injects valid names, including a U+FFFD not followed by anything escape-like; checks they are unchanged
    (IDs stored before the mapping keep restoring to the same path)."""
    assert path_to_id(name) == name and id_to_path(name) == name


def test_a_valid_name_that_looks_escaped_gets_another_id() -> None:
    """Injects the valid UTF-8 name "caf\\ufffdE9.txt" next to the undecodable b"caf\\xe9.txt"; checks they get
    different IDs and each restores to its own name."""
    valid, undecodable = "caf\ufffdE9.txt", os.fsdecode(b"caf\xe9.txt")
    assert path_to_id(valid) != path_to_id(undecodable)
    assert id_to_path(path_to_id(valid)) == valid and id_to_path(path_to_id(undecodable)) == undecodable


def test_random_byte_names_round_trip_without_collisions() -> None:
    """Injects 50,000 random names over the bytes that matter (U+FFFD's UTF-8, hex digits, bytes 0x80-0xff);
    checks every ID maps back to its name's bytes and no two names share an ID."""
    rng = random.Random(12)
    alphabet = [b"\xef\xbf\xbd", b"8", b"F", b"A", b"0", b"9", b"x", b"\xe9", b"\x80", b"\xff", b"\xc3\xa9"]
    seen: dict[str, bytes] = {}
    for _ in range(50_000):
        raw = b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        file_id = path_to_id(os.fsdecode(raw))
        assert os.fsencode(id_to_path(file_id)) == raw
        assert seen.setdefault(file_id, raw) == raw
        check_id(file_id, storing=True)


def test_an_id_no_path_maps_to_is_refused_on_restore() -> None:
    """Injects IDs with a doubled U+FFFD where no escape follows (only ever made by hand, e.g. casstor store);
    checks a one-line error instead of restoring onto the path of another ID."""
    with pytest.raises(CasstorError, match="no path maps to"):
        id_to_path("a\ufffd\ufffdb")
