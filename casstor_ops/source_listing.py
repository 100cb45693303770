"""What a bulk ingest reads: a directory, a glob or a list of paths, as (path, id, size).

The listing runs once, on the driver, and only stats files (it never
reads them): each :class:`SourceFile` carries the absolute path an
executor opens, the store id (``prefix`` + the path relative to the
source root, POSIX separators, like ``restic``/``borg`` archive paths) and
the size the work is split by.

* a directory: every regular file below it (symlinks to files followed,
  symlinked directories not, so a link cycle cannot loop); root = the
  directory;
* a glob (``data/**/*.bin``, ``**`` recursive): the regular files it
  matches, and every file below a directory it matches; root = the
  longest directory prefix of the pattern without wildcards;
* a list of paths: each path as given, even if it does not exist (an
  explicit list is a promise: a missing path is reported by the ingest as
  a failed file with size -1, not silently dropped); root = ``root`` or
  the deepest directory common to them all.

Example::

    >>> [f.file_id for f in list_source("photos", prefix="p/")]          # doctest: +SKIP
    ['p/2024/a.jpg', 'p/2024/b.jpg', 'p/readme.txt']

Failures: a source that does not exist, a glob matching nothing, a
directory without files, an empty list, or a file outside ``root`` raise
:class:`~casstor_ops.errors.CasstorError` with one line naming it.
Sockets, FIFOs and devices are skipped (reading a FIFO would block).
"""

from __future__ import annotations

import glob
import os
import stat
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

from .errors import CasstorError

UNKNOWN_SIZE = -1


class SourceFile(NamedTuple):
    path: str
    file_id: str
    size: int  # at listing time; UNKNOWN_SIZE when the path could not be stat'ed


def _regular_size(path: str) -> int | None:
    """The size of a regular file (following symlinks), None for anything else or nothing."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _walk(directory: str) -> list[str]:
    """Every path below ``directory``, in path order (a stable id order for reports)."""
    return sorted(os.path.join(parent, name) for parent, _, names in os.walk(directory) for name in names)


def _glob_root(pattern: str) -> str:
    parts = []
    for part in Path(pattern).parts:
        if glob.has_magic(part):
            break
        parts.append(part)
    return str(Path(*parts)) if parts else "."


def _file_id(prefix: str, root: str, path: str) -> str:
    relative = os.path.relpath(path, root)
    if relative == os.curdir or relative.startswith(os.pardir + os.sep) or relative == os.pardir:
        raise CasstorError(f"{path!r} is not below the source root {root!r}")
    return prefix + Path(relative).as_posix()


def _listed(paths: Iterable[str], root: str, prefix: str, keep_missing: bool) -> list[SourceFile]:
    files, seen = [], set()
    for path in paths:
        path = os.path.abspath(path)
        size = _regular_size(path)
        if size is None and not (keep_missing and not os.path.lexists(path)):
            continue
        file_id = _file_id(prefix, root, path)
        if file_id not in seen:
            seen.add(file_id)
            files.append(SourceFile(path, file_id, UNKNOWN_SIZE if size is None else size))
    return files


def list_source(source: str | os.PathLike | Sequence[str | os.PathLike], prefix: str = "",
                root: str | os.PathLike | None = None) -> list[SourceFile]:
    """The files of ``source`` with their store ids (see the module docstring)."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if os.path.isdir(text):
            base = os.path.abspath(root or text)
            files = _listed(_walk(text), base, prefix, keep_missing=False)
            if not files:
                raise CasstorError(f"{text!r} holds no regular files: nothing to ingest")
            return files
        if os.path.isfile(text):
            return _listed([text], os.path.abspath(root or os.path.dirname(text) or "."), prefix, False)
        if not glob.has_magic(text):
            raise CasstorError(f"{text!r}: no such file or directory")
        base = os.path.abspath(root or _glob_root(text))
        matches = sorted(glob.glob(text, recursive=True))
        expanded = (p for match in matches for p in (_walk(match) if os.path.isdir(match) else [match]))
        files = _listed(expanded, base, prefix, keep_missing=False)
        if not files:
            raise CasstorError(f"{text!r} matches no regular files: nothing to ingest")
        return files
    paths = [os.path.abspath(os.fspath(p)) for p in source]
    if not paths:
        raise CasstorError("the list of paths to ingest is empty")
    base = os.path.abspath(root) if root else os.path.commonpath([os.path.dirname(p) for p in paths])
    return _listed(paths, base, prefix, keep_missing=True)
