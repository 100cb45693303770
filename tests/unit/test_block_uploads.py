"""BlockUploads: large blocks are encoded off the caller's thread, written in upload order, and indexed."""

from __future__ import annotations

from types import SimpleNamespace

from casstor_ops.store.block_uploads import OFFLOAD_BYTES, BlockUploads
from casstor_ops.store.codec import BlockCodec, decode


class FakeRequests:
    """Records submissions; ``poll`` answers the oldest one (a fake of the request queue, no database)."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []
        self._waiting: list = []

    @property
    def busy(self) -> bool:
        return bool(self._waiting)

    def submit(self, statement, params, on_result) -> None:
        self.sent.append((statement, params))
        self._waiting.append(on_result)

    def submit_batch(self, statement, rows, on_result) -> None:
        self.submit(statement, rows, on_result)

    def poll(self, block: bool = True) -> bool:
        if self._waiting:
            self._waiting.pop(0)([])
        return True


def test_large_and_small_blocks_are_written_encoded_and_indexed():
    """Two large blocks (encoded on the shared threads) and a small one (inline): every block is written
    once with a payload that decodes to it, the large ones in upload order, and all are indexed."""
    requests = FakeRequests()
    indexed = []
    uploads = BlockUploads(requests, SimpleNamespace(insert_block="block", insert_existing="index"),
                           BlockCodec.parse("zstd:3"), on_indexed=indexed.extend)
    blocks = {b"a" * 32: bytes(OFFLOAD_BYTES), b"b" * 32: b"xy" * OFFLOAD_BYTES, b"c" * 32: b"z" * 100}
    for digest, data in blocks.items():
        uploads.hold(digest, memoryview(data))
        uploads.upload(digest)
    while requests.busy or uploads.indexing:
        if requests.busy:
            requests.poll()
        else:
            uploads.send_index()
    writes = [params for statement, params in requests.sent if statement == "block"]
    assert sorted(w[0] for w in writes) == sorted(blocks)
    assert [w[0] for w in writes if len(blocks[w[0]]) >= OFFLOAD_BYTES] == [b"a" * 32, b"b" * 32]
    for digest, size, codec, payload in writes:
        assert size == len(blocks[digest]) and decode(codec, bytes(payload), size) == blocks[digest]
    assert sorted(indexed) == sorted(blocks) and uploads.held_bytes == 0 and uploads.new_blocks == 3
