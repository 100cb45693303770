"""The SKIP_METADATA flag on EXECUTE frames of prepared reads (casstor_ops.cluster.skip_metadata), without a node."""

from __future__ import annotations

import re

import pytest
from cassandra import ConsistencyLevel, ProtocolVersion
from cassandra.protocol import ExecuteMessage, ProtocolHandler

from casstor_ops.cluster.skip_metadata import SKIP_METADATA, skipping_metadata, with_skip_metadata
from casstor_ops.store.cql.statements import Statements, _Prepared

QUERY_ID = b"\x8a" * 16
FLAGS_AT = 9 + 2 + len(QUERY_ID) + 2  # the frame's header, the id's length and bytes, the consistency


def _execute(skip_meta: bool, **options) -> ExecuteMessage:
    # Values (flag 0x01) and a timestamp (0x20), as the driver sends a bound read.
    return ExecuteMessage(QUERY_ID, [b"key"], ConsistencyLevel.LOCAL_QUORUM, timestamp=1_700_000_000_000_000,
                          skip_meta=skip_meta, **options)


def _frame(handler: type, message: ExecuteMessage, version: int = ProtocolVersion.V4, compressor=None) -> bytes:
    return handler.encode_message(message, 7, version, compressor, False)


def test_the_flag_is_set_in_the_query_flags_byte_and_nothing_else_changes() -> None:
    """The byte patched is the query flags the driver wrote (values and timestamp: 0x21), by the v4 layout."""
    frame = _frame(ProtocolHandler, _execute(True))
    assert frame[FLAGS_AT] == 0x21
    patched = with_skip_metadata(frame, QUERY_ID)
    assert patched[FLAGS_AT] == 0x21 | SKIP_METADATA
    assert patched[:FLAGS_AT] == frame[:FLAGS_AT] and patched[FLAGS_AT + 1:] == frame[FLAGS_AT + 1:]


def test_the_handler_skips_only_what_the_driver_marks_skippable_in_frames_it_knows() -> None:
    """A prepared read (``skip_meta``, which the driver sets for a statement prepared with columns) gets the flag;
    a write or a lightweight transaction (no columns), a compressed body, a custom payload and protocol v5 are sent
    as the driver built them."""
    skipping = skipping_metadata(ProtocolHandler)
    assert _frame(skipping, _execute(True)) == with_skip_metadata(_frame(ProtocolHandler, _execute(True)), QUERY_ID)
    assert _frame(skipping, _execute(False)) == _frame(ProtocolHandler, _execute(False))
    compress = bytes  # any compressor: the body's layout is no longer known
    assert _frame(skipping, _execute(True), compressor=compress) == \
        _frame(ProtocolHandler, _execute(True), compressor=compress)
    with_payload = _execute(True)
    with_payload.custom_payload = {"tag": b"x"}
    assert _frame(skipping, with_payload) == _frame(ProtocolHandler, with_payload)
    v5 = _execute(True, result_metadata_id=b"\x01" * 16)
    assert _frame(skipping, v5, ProtocolVersion.V5) == _frame(ProtocolHandler, v5, ProtocolVersion.V5)


@pytest.mark.parametrize("name", sorted(name for name, value in vars(Statements).items()
                                        if isinstance(value, _Prepared)))
def test_every_prepared_read_names_its_columns(name: str) -> None:
    """A node that skips the columns relies on the client's copy from prepare time, which a ``SELECT *`` lets go
    stale when its table gains a column: no statement of the registry selects ``*``."""
    assert not re.search(r"\bSELECT\s+(DISTINCT\s+)?\*", getattr(Statements, name).cql, re.IGNORECASE)
