"""The generated corpus: deterministic, the sizes asked, and versions that share most blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.lab.corpus import tree_files, write_new_data, write_versioned_tree
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.schema import StoreSettings

MIB = 1 << 20


def _blocks(paths: list[Path]) -> dict[bytes, int]:
    """hash -> size of the store's chunks of ``paths``."""
    settings = StoreSettings()
    return {block_hash(c): len(c) for p in paths for c in chunks(p, settings)}


def _digest(paths: list[Path]) -> str:
    return block_hash(b"".join(p.name.encode() + p.read_bytes() for p in paths)).hex()


def test_new_data_sizes_names_and_remainder(tmp_path: Path) -> None:
    paths = write_new_data(tmp_path, 10 * MIB + 7, files=3, seed=1)
    assert [p.name for p in paths] == ["new-000.bin", "new-001.bin", "new-002.bin"]
    sizes = [p.stat().st_size for p in paths]
    assert sizes[0] == sizes[1] == (10 * MIB + 7) // 3
    assert sum(sizes) == 10 * MIB + 7


def test_new_data_is_deterministic_and_seeded(tmp_path: Path) -> None:
    a = write_new_data(tmp_path / "a", 9 * MIB, files=2, seed=7)  # > one 8 MiB generation piece
    b = write_new_data(tmp_path / "b", 9 * MIB, files=2, seed=7)
    c = write_new_data(tmp_path / "c", 9 * MIB, files=2, seed=8)
    assert _digest(a) == _digest(b) != _digest(c)
    # Pinned bytes: the corpus must be the same on every machine and NumPy release (PCG64 is stable).
    one = write_new_data(tmp_path / "pinned", 4096, files=1, seed=0)
    assert block_hash(one[0].read_bytes()).hex().startswith("701465b96001942894a9d496208d3eed")


def test_new_data_does_not_deduplicate(tmp_path: Path) -> None:
    paths = write_new_data(tmp_path, 8 * MIB, files=2, seed=3)
    blocks = _blocks(paths)
    assert sum(blocks.values()) == 8 * MIB  # every chunk distinct: nothing to deduplicate
    assert not set(blocks) & set(_blocks(write_new_data(tmp_path / "other", 8 * MIB, files=2, seed=4)))


def test_versioned_tree_layout(tmp_path: Path) -> None:
    versions = write_versioned_tree(tmp_path, versions=3, files=4, file_bytes=MIB, seed=1)
    assert [v.name for v in versions] == ["v000", "v001", "v002"]
    names = [[p.name for p in tree_files(v)] for v in versions]
    base = [f"file-{i:03d}.bin" for i in range(4)]
    assert names == [["extra-000.bin", *base], ["extra-001.bin", *base], ["extra-002.bin", *base]]
    assert (versions[0] / "extra-000.bin").stat().st_size == MIB // 4
    for version in versions:
        for name in base:
            assert abs((version / name).stat().st_size - MIB) < 20_000  # inserts and deletes keep sizes close


def test_versioned_tree_is_deterministic(tmp_path: Path) -> None:
    a = write_versioned_tree(tmp_path / "a", versions=2, files=2, file_bytes=MIB, seed=5)
    b = write_versioned_tree(tmp_path / "b", versions=2, files=2, file_bytes=MIB, seed=5)
    c = write_versioned_tree(tmp_path / "c", versions=2, files=2, file_bytes=MIB, seed=6)
    assert [_digest(tree_files(v)) for v in a] == [_digest(tree_files(v)) for v in b]
    assert _digest(tree_files(a[1])) != _digest(tree_files(c[1]))
    pinned = write_versioned_tree(tmp_path / "pinned", versions=2, files=1, file_bytes=8192, seed=0)
    joined = b"".join(p.read_bytes() for p in tree_files(pinned[1]))
    assert block_hash(joined).hex().startswith("c7083da528b631cdcf876cadf991d584")


def test_versions_share_most_blocks_and_every_edit_changes_something(tmp_path: Path) -> None:
    versions = write_versioned_tree(tmp_path, versions=3, files=4, file_bytes=4 * MIB, seed=2)
    for older, newer in zip(versions, versions[1:]):
        seen = _blocks(tree_files(older))
        current = _blocks(tree_files(newer))
        shared = sum(size for h, size in current.items() if h in seen) / sum(current.values())
        # 1 file unchanged, front insert ~100%, 1% overwrite ~80%, 10+10 edits ~75% kept, extra file new.
        assert 0.6 < shared < 0.95, shared
        changed = [p.name for p in tree_files(newer)
                   if not (older / p.name).exists() or (older / p.name).read_bytes() != p.read_bytes()]
        assert len(changed) == 4  # three edited base files and the new extra file


@pytest.mark.parametrize("kwargs", [dict(total_bytes=-1), dict(files=0)])
def test_new_data_rejects_bad_sizes(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(CasstorError, match="must be at least"):
        write_new_data(tmp_path, **{"total_bytes": MIB, **kwargs})


@pytest.mark.parametrize("kwargs", [dict(versions=0), dict(files=0), dict(file_bytes=100)])
def test_versioned_tree_rejects_bad_sizes(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(CasstorError, match="must be at least"):
        write_versioned_tree(tmp_path, **kwargs)
