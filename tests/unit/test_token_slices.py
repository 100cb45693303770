"""The upgrade's token slices (:class:`~casstor_ops.store.namespace.upgrade.TokenSlice`): every head in exactly one."""

from __future__ import annotations

import pytest

from casstor_ops.store.namespace.upgrade import MAX_TOKEN, MIN_TOKEN, TokenSlice


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 1000])
def test_the_slices_cover_the_ring_end_to_end_without_overlap(n: int) -> None:
    slices = TokenSlice.split(n)
    assert len(slices) == n
    assert slices[0].lo == MIN_TOKEN and slices[-1].hi == MAX_TOKEN
    assert all(a.hi == b.lo for a, b in zip(slices, slices[1:]))
    assert all(s.lo < s.hi for s in slices)


def test_one_slice_is_the_whole_ring_and_zero_slices_are_refused() -> None:
    assert TokenSlice.split(1) == [TokenSlice()]
    with pytest.raises(ValueError):
        TokenSlice.split(0)
