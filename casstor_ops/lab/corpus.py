"""A generated, deterministic test corpus with realistic redundancy.

Two kinds of data, both from a seed, so a benchmark, ``make demo`` and the
tests see the same bytes on every machine:

* **new data**: incompressible bytes that no store holds yet (what a first
  backup of photos or archives looks like). Every byte comes from NumPy's
  PCG64 generator, whose stream is stable across NumPy releases.
* **a versioned tree**: ``versions`` snapshots of a directory of files, each
  derived from the previous one by the edits real files see (the edits of
  ``../shared/stack-notes.md``'s dedup measurement), so consecutive versions
  share most of their content:

  - bytes inserted near the front of a file (shifts every later offset:
    fixed-size chunking loses everything, content-defined chunking nothing);
  - ~1% of the 4 KiB regions of a file overwritten in place;
  - a few small inserts and deletes at random offsets;
  - one file added and the previous version's added file removed;
  - files left unchanged (most files in a real tree are).

Example::

    >>> paths = write_new_data(tmp, total_bytes=8 << 20, files=2, seed=1)     # doctest: +SKIP
    >>> [p.name for p in paths]                                             # doctest: +SKIP
    ['new-000.bin', 'new-001.bin']
    >>> versions = write_versioned_tree(tmp / "tree", versions=3, files=4,
    ...                                 file_bytes=1 << 20, seed=1)          # doctest: +SKIP
    >>> [v.name for v in versions]                                          # doctest: +SKIP
    ['v000', 'v001', 'v002']
    >>> [p.name for p in tree_files(versions[1])]                           # doctest: +SKIP
    ['extra-001.bin', 'file-000.bin', 'file-001.bin', 'file-002.bin', 'file-003.bin']

Failures: sizes or counts out of range raise
:class:`~casstor_ops.errors.CasstorError`; an existing target directory is
written into (files of the same names are overwritten, others left alone).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from casstor_ops.errors import CasstorError

# Random bytes are generated and written in pieces of this size, so memory
# stays flat for any file size (the piece size is part of the byte stream:
# changing it changes the corpus).
_PIECE = 8 << 20
_REGION = 4096
_OVERWRITE_FRACTION = 0.01
_FRONT_INSERT_BYTES = 100
_SMALL_EDITS = 10       # inserts and as many deletes
_SMALL_EDIT_MAX = 1000  # bytes per small insert or delete
_EXTRA_FILE_FRACTION = 4  # the added file is file_bytes // 4 long


def _rng(seed: int, *stream: int) -> np.random.Generator:
    """An independent generator per (seed, stream...), so files do not depend on each other's sizes."""
    return np.random.Generator(np.random.PCG64([seed, *stream]))


def _random_bytes(rng: np.random.Generator, size: int) -> bytes:
    return rng.bytes(size) if size else b""


def _write_random_file(path: Path, size: int, rng: np.random.Generator) -> None:
    with open(path, "wb") as out:
        remaining = size
        while remaining:
            piece = min(remaining, _PIECE)
            out.write(_random_bytes(rng, piece))
            remaining -= piece


def _check(name: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise CasstorError(f"{name}={value}: must be at least {minimum}")


def write_new_data(directory: str | Path, total_bytes: int, files: int = 4, seed: int = 0) -> list[Path]:
    """Write ``total_bytes`` of incompressible bytes as ``files`` files ``new-NNN.bin``.

    Sizes are equal, the last file taking the remainder. Returns the paths,
    in name order.

    Example::

        >>> [p.stat().st_size for p in write_new_data(d, 10, files=3)]   # doctest: +SKIP
        [3, 3, 4]
    """
    _check("total_bytes", total_bytes, 0)
    _check("files", files, 1)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    each = total_bytes // files
    paths = []
    for i in range(files):
        size = each if i < files - 1 else total_bytes - each * (files - 1)
        path = directory / f"new-{i:03d}.bin"
        _write_random_file(path, size, _rng(seed, 0, i))
        paths.append(path)
    return paths


def _insert_front(data: bytearray, rng: np.random.Generator) -> None:
    offset = int(rng.integers(0, min(_REGION, len(data)) + 1))
    data[offset:offset] = _random_bytes(rng, _FRONT_INSERT_BYTES)


def _overwrite_regions(data: bytearray, rng: np.random.Generator) -> None:
    regions = len(data) // _REGION
    if regions == 0:
        return
    count = max(1, round(regions * _OVERWRITE_FRACTION))
    for region in rng.choice(regions, size=count, replace=False):
        start = int(region) * _REGION
        data[start:start + _REGION] = _random_bytes(rng, _REGION)


def _insert_and_delete(data: bytearray, rng: np.random.Generator) -> None:
    for _ in range(_SMALL_EDITS):
        offset = int(rng.integers(0, len(data) + 1))
        data[offset:offset] = _random_bytes(rng, int(rng.integers(1, _SMALL_EDIT_MAX + 1)))
    for _ in range(_SMALL_EDITS):
        if not data:
            return
        offset = int(rng.integers(0, len(data)))
        del data[offset:offset + int(rng.integers(1, _SMALL_EDIT_MAX + 1))]


# Edit applied to file i in version k: _EDITS[(i + k) % len(_EDITS)]; None leaves the file as it was.
_EDITS = (_insert_front, _overwrite_regions, _insert_and_delete, None)


def write_versioned_tree(directory: str | Path, versions: int = 5, files: int = 4,
                         file_bytes: int = 16 << 20, seed: int = 0) -> list[Path]:
    """Write ``versions`` snapshots ``vNNN/`` of a tree of ``files`` files of ~``file_bytes`` each.

    ``v000`` holds ``file-NNN.bin`` of random bytes and ``extra-000.bin``
    (``file_bytes // 4``). Version *k* edits each base file with one of the
    edits of the module docstring (rotating, so every version has a front
    insert, an overwrite, inserts/deletes and an unchanged file once
    ``files >= 4``), adds ``extra-k.bin`` and drops ``extra-(k-1).bin``.
    Returns the version directories in order.

    Example::

        >>> v = write_versioned_tree(d, versions=2, files=1, file_bytes=1 << 16)   # doctest: +SKIP
        >>> sorted(p.name for p in v[1].iterdir())                             # doctest: +SKIP
        ['extra-001.bin', 'file-000.bin']
    """
    _check("versions", versions, 1)
    _check("files", files, 1)
    _check("file_bytes", file_bytes, _REGION)
    directory = Path(directory)
    contents = [bytearray(_random_bytes(_rng(seed, 1, i), file_bytes)) for i in range(files)]
    out = []
    for k in range(versions):
        if k:
            for i, data in enumerate(contents):
                edit = _EDITS[(i + k) % len(_EDITS)]
                if edit is not None:
                    edit(data, _rng(seed, 2, k, i))
        version_dir = directory / f"v{k:03d}"
        version_dir.mkdir(parents=True, exist_ok=True)
        for i, data in enumerate(contents):
            (version_dir / f"file-{i:03d}.bin").write_bytes(data)
        _write_random_file(version_dir / f"extra-{k:03d}.bin", file_bytes // _EXTRA_FILE_FRACTION,
                           _rng(seed, 3, k))
        out.append(version_dir)
    return out


def tree_files(directory: str | Path) -> list[Path]:
    """Every regular file under ``directory``, in path order (a stable store and restore order)."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file())
