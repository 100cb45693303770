"""Prepared reads answered without their column list: the protocol's SKIP_METADATA flag, which the driver never sets.

A prepared statement's columns (keyspace, table, name and type of each) come
back in the PREPARED answer, and the driver keeps them on the statement
(``result_metadata``) and can decode rows with them. But the Python driver
never sets the flag that tells the node to leave them out of each result, so
every answer carried them again and the driver parsed them again, on its one
thread. A plain column costs little; a map column costs a new type class each
time (``MapType.apply_parameters``: 15 µs, and garbage for the cyclic
collector). The head row of an S3 object has three maps: 212 µs of client CPU
a read, against 134 µs with the flag (the same read, 8,000 a run, 20 in
flight); an S3 GET served from the content cache took 0.43-0.46 ms of the
server's CPU against 0.56-0.59 (docs/benchmarks.md).

Why skipping is safe here, though the driver does not do it (CASSANDRA-10786):
the node then relies on the client's copy of the columns, which goes stale only
if a statement's result columns change while it stays prepared: a ``SELECT *``
of a table that gains a column, or a user-defined type altered. Every casstor
read names its columns and none uses a user type
(``tests/unit/test_skip_metadata.py`` checks every statement of the registry).
A column dropped under a prepared read makes the node forget the statement;
the driver prepares it again and keeps the new columns. Only what the driver
itself marks skippable is skipped: a statement prepared with a non-empty
column list, so never a lightweight transaction (its columns depend on
whether it applied, and are not known when it is prepared).

Example::

    >>> session.client_protocol_handler = skipping_metadata(session.client_protocol_handler)  # doctest: +SKIP

Failures: none of its own. A frame whose layout is not the one known here
(another protocol version, a compressed body, a custom payload) is sent as
the driver built it, with the columns in its answer.
"""

from __future__ import annotations

from cassandra import ProtocolVersion
from cassandra.protocol import ExecuteMessage

SKIP_METADATA = 0x02  # a query flag of native protocol v4 (section 4.1.4 of its specification)
_HEADER_BYTES = 9  # a v4 frame's header: version, flags, stream (2), opcode, body length (4)


def skipping_metadata(handler: type) -> type:
    """A subclass of the driver's protocol handler ``handler`` whose EXECUTE frames of prepared reads ask for rows
    only (see the module docstring); the rest of its encoding and all of its decoding are ``handler``'s."""

    class SkippingMetadata(handler):
        @classmethod
        def encode_message(cls, msg, stream_id: int, protocol_version: int, compressor, allow_beta_protocol_version):
            frame = super().encode_message(msg, stream_id, protocol_version, compressor, allow_beta_protocol_version)
            if isinstance(msg, ExecuteMessage) and msg.skip_meta and protocol_version == ProtocolVersion.V4 \
                    and compressor is None and not msg.custom_payload:
                return with_skip_metadata(frame, msg.query_id)
            return frame

    return SkippingMetadata


def with_skip_metadata(frame: bytes, query_id: bytes) -> bytes:
    """A v4 EXECUTE ``frame`` of the prepared statement ``query_id`` with SKIP_METADATA set.

    The body is the id (a short length, then its bytes), then the query
    parameters: the consistency (a short), then the flags (a byte).
    """
    flags = _HEADER_BYTES + 2 + len(query_id) + 2
    return b"".join((frame[:flags], bytes((frame[flags] | SKIP_METADATA,)), frame[flags + 1:]))
