"""Chunking: identical cut points to pyfastcdc's stream chunker, from one pass in segments."""

import io
import os

import pytest

from casstor_ops.store.blocks.chunking import chunks, make_chunker, segments
from casstor_ops.store.schema import StoreSettings

from .support import SESSION_SETTINGS


@pytest.fixture(params=[StoreSettings(), SESSION_SETTINGS], ids=["default sizes", "16-48-256 KiB"])
def settings(request) -> StoreSettings:
    """Today's default chunk sizes, and those of stores made before them (the test session's)."""
    return request.param


def _reference(data: bytes, settings: StoreSettings) -> list[bytes]:
    return [bytes(c.data) for c in make_chunker(settings).cut_stream(io.BytesIO(data))]


@pytest.mark.parametrize("segment_bytes", [600_000, 1_048_576, 4 * 1_048_576])
def test_segments_cut_exactly_like_cut_stream(segment_bytes, settings):
    data = os.urandom(9_000_000) + bytes(2_000_000) + os.urandom(777_777)
    got = [bytes(c) for seg in segments(io.BytesIO(data), settings, segment_bytes) for c in seg.chunks]
    assert got == _reference(data, settings)


def test_segments_count_every_byte_once(settings):
    data = os.urandom(5_000_001)
    assert sum(seg.fresh_bytes for seg in segments(io.BytesIO(data), settings, 1_000_000)) == len(data)


def test_held_chunks_keep_their_bytes_while_later_segments_reuse_buffers(settings):
    data = os.urandom(20_000_000)
    held, buffers = [], set()
    for index, seg in enumerate(segments(io.BytesIO(data), settings, 600_000)):
        buffers.update(id(c.obj) for c in seg.chunks)
        if index % 3 == 0:  # a consumer still holding these (e.g. uploads in flight)
            held += [(c, bytes(c)) for c in seg.chunks]
    assert all(bytes(view) == copy for view, copy in held)
    released_buffers = {id(c.obj) for seg in segments(io.BytesIO(data), settings, 600_000) for c in seg.chunks[:1]}
    assert len(released_buffers) <= 3 < len(buffers)


def test_chunk_sizes_stay_within_settings(settings):
    sizes = [len(c) for c in chunks(io.BytesIO(os.urandom(6_000_000)), settings)]
    assert all(settings.chunk_min <= s <= settings.chunk_max for s in sizes[:-1])
    assert sum(sizes) == 6_000_000


def test_small_and_empty_inputs(settings):
    assert list(chunks(io.BytesIO(b""), settings)) == []
    assert [bytes(c) for c in chunks(io.BytesIO(b"x"), settings)] == [b"x"]


def test_a_path_is_read_like_a_file(tmp_path, settings):
    data = os.urandom(1_000_000)
    (tmp_path / "f").write_bytes(data)
    assert [bytes(c) for c in chunks(tmp_path / "f", settings)] == _reference(data, settings)


class _Trickle(io.RawIOBase):
    """A pipe-like reader that returns at most 1000 bytes a call."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self._data.readinto(memoryview(b)[:1000])


def test_short_reads_do_not_change_the_cuts(settings):
    data = os.urandom(1_500_000)
    assert [bytes(c) for c in chunks(_Trickle(data), settings)] == _reference(data, settings)
