"""What a bulk ingest reads: a directory, a glob or a list of paths, as (path, id, size).

The listing runs once, on the driver, and only stats files (it never
reads them): each :class:`SourceFile` carries the absolute path an
executor opens, the store id (``prefix`` + the path relative to the
source root, POSIX separators, like ``restic``/``borg`` archive paths,
through :func:`~casstor_ops.store.trees.path_ids.path_to_id`, so a name that is
not valid UTF-8 gets a lossless escaped id) and the size the work is
split by.

* a directory: every regular file below it; root = the directory;
* a glob (``data/**/*.bin``, ``**`` recursive; as :func:`glob.glob`, a
  wildcard does not match a leading ``.``): the regular files it matches,
  and every file below a directory it matches; root = the longest
  directory prefix of the pattern without wildcards;
* a list of paths: each path as given, even if it does not exist (an
  explicit list is a promise: a missing path is reported by the ingest as
  a failed file with size -1, not silently dropped); root = ``root`` or
  the deepest directory common to them all;
* a :class:`~casstor_ops.store.trees.locations.Location` (a URL of any fsspec
  filesystem, resolved by the caller): the files the filesystem lists
  below it (:func:`~casstor_ops.store.trees.locations.list_files`), each
  ``path`` the file's URL; the rules for IDs are the same.

No symlink is followed unless ``follow_symlinks`` (so a link cannot lead
the ingest outside the tree, e.g. a link to ``/etc/shadow`` that a user who
may write the tree put there for an ingest run by root): a symlinked
directory below the root is not entered, and a symlink to a regular file,
found or named, is one entry with ``skipped`` set to
:data:`SYMLINK_NOT_FOLLOWED` and size 0, reported but never opened (the
ingest opens every file with ``O_NOFOLLOW``, so a link swapped in after the
listing is refused too). Either way each directory is listed once, by
``(st_dev, st_ino)``, so a link cycle cannot loop and a directory reached
by two links is listed under the first path.

Example::

    >>> [f.file_id for f in list_source("photos", prefix="p/")]          # doctest: +SKIP
    ['p/2024/a.jpg', 'p/2024/b.jpg', 'p/locked/', 'p/readme.txt']

Failures: a source that does not exist or cannot be listed, a glob
matching nothing, a directory without files, an empty list, or a file
outside ``root`` raise :class:`~casstor_ops.errors.CasstorError` with one
line naming it. A directory below the root that cannot be listed
(unreadable, or gone since its parent was read) is one entry, id
``prefix/its/path/``, with its one-line ``error``: the ingest reports it
as a failed path. Sockets, FIFOs and devices are skipped (reading a FIFO
would block).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import posixpath
import stat
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

from casstor_ops.errors import CasstorError
from casstor_ops.store.trees.locations import Location, list_files
from casstor_ops.store.trees.path_ids import path_to_id

UNKNOWN_SIZE = -1
SYMLINK_NOT_FOLLOWED = "symlink, not followed"


class SourceFile(NamedTuple):
    path: str
    file_id: str
    size: int  # at listing time; UNKNOWN_SIZE when the path could not be stat'ed
    error: str | None = None  # set for a directory that could not be listed: a failed path, not a file
    skipped: str | None = None  # why a listed path is reported but not read (SYMLINK_NOT_FOLLOWED)


def _size_and_link(path: str) -> tuple[int | None, bool]:
    """The size of a regular file (following symlinks), None for anything else or nothing; and whether ``path`` is
    a symlink. One ``lstat`` for a file that is no link (nearly all of a tree's), a ``stat`` more for a link."""
    try:
        info = os.lstat(path)
        link = stat.S_ISLNK(info.st_mode)
        if link:
            info = os.stat(path)
    except OSError:
        return None, False
    return (info.st_size if stat.S_ISREG(info.st_mode) else None), link


class _Walker:
    """Directory reads for one listing: symlinked directories entered only if asked, failures kept."""

    def __init__(self, follow_symlinks: bool) -> None:
        self.follow_symlinks = follow_symlinks
        self.failed: dict[str, str] = {}  # directory -> one-line error

    def entries(self, directory: str, visited: set[tuple], state: object = None) -> list[os.DirEntry]:
        """The entries of ``directory`` by name; none if it was listed in this ``state`` before or cannot be.

        The glob lists one directory once per pattern position (``state``):
        finitely many, so a cycle still ends.
        """
        try:
            info = os.stat(directory)
            if (info.st_dev, info.st_ino, state) in visited:
                return []
            visited.add((info.st_dev, info.st_ino, state))
            with os.scandir(directory) as found:
                return sorted(found, key=lambda entry: entry.name)
        except OSError as err:
            self.failed[directory] = f"cannot list the directory: {err.strerror or err}"
            return []

    def enters(self, entry: os.DirEntry | str) -> bool:
        """Whether a walk goes into ``entry``: a directory, and not a symlink unless following them."""
        if isinstance(entry, str):
            return os.path.isdir(entry) and (self.follow_symlinks or not os.path.islink(entry))
        return entry.is_dir(follow_symlinks=self.follow_symlinks)

    def files(self, directory: str, visited: set[tuple]) -> Iterator[str]:
        """Every path below ``directory`` that is not a directory entered (a stack: no recursion limit)."""
        pending = [directory]
        while pending:
            for entry in self.entries(pending.pop(), visited):
                if self.enters(entry):
                    pending.append(entry.path)
                else:
                    yield entry.path

    def glob(self, root: str, segments: tuple[str, ...]) -> Iterator[str]:
        """The paths below ``root`` matching the pattern ``segments`` (``**``: zero or more directories)."""
        visited: set[tuple] = set()
        pending = [(root, segments)] if os.path.isdir(root) else []  # no root: no match, not a failed directory
        while pending:
            directory, (segment, *rest) = pending.pop()
            if not glob.has_magic(segment):
                path = os.path.join(directory, segment)
                if not rest and os.path.lexists(path):
                    yield path
                elif rest and self.enters(path):
                    pending.append((path, tuple(rest)))
                continue
            if segment == "**":  # zero directories: the rest of the pattern applies here
                if rest:
                    pending.append((directory, tuple(rest)))
                else:
                    yield directory
            for entry in self.entries(directory, visited, state=(segment, *rest)):
                if entry.name.startswith(".") and not segment.startswith("."):
                    continue  # as glob.glob: a wildcard does not match a leading dot
                if segment == "**" and self.enters(entry):
                    pending.append((entry.path, (segment, *rest)))
                elif segment == "**" or fnmatch.fnmatchcase(entry.name, segment):
                    if not rest:
                        yield entry.path
                    elif self.enters(entry):
                        pending.append((entry.path, tuple(rest)))


def _glob_split(pattern: str) -> tuple[str, tuple[str, ...]]:
    """The longest directory prefix without wildcards, and the pattern's segments after it."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    return (str(Path(*parts[:fixed])) if fixed else "."), parts[fixed:]


def _file_id(prefix: str, root: str, path: str) -> str:
    """``prefix`` + ``path`` relative to ``root`` (both absolute and normalized), POSIX separators."""
    below = root.rstrip(os.sep) + os.sep
    if path.startswith(below) and len(path) > len(below):  # a tree's own paths: no relpath needed
        relative = path[len(below):]
    else:
        relative = os.path.relpath(path, root)
        if relative == os.curdir or relative.startswith(os.pardir + os.sep) or relative == os.pardir:
            raise CasstorError(f"{path!r} is not below the source root {root!r}")
    return path_to_id(prefix + relative.replace(os.sep, "/"))


def _listed(paths: Iterable[str], root: str, prefix: str, keep_missing: bool, follow_symlinks: bool
            ) -> list[SourceFile]:
    files, seen = [], set()
    for path in paths:
        path = os.path.abspath(path)
        size, link = _size_and_link(path)
        if size is None and not (keep_missing and not os.path.lexists(path)):
            continue
        file_id = _file_id(prefix, root, path)
        if file_id in seen:
            continue
        seen.add(file_id)
        if size is not None and not follow_symlinks and link:
            files.append(SourceFile(path, file_id, 0, skipped=SYMLINK_NOT_FOLLOWED))
        else:
            files.append(SourceFile(path, file_id, UNKNOWN_SIZE if size is None else size))
    return files


def _failed_directories(walker: _Walker, root: str, prefix: str) -> list[SourceFile]:
    """The directories that could not be listed, as failed entries; the root itself is the whole source failing."""
    failed = []
    for directory, error in sorted(walker.failed.items()):
        path = os.path.abspath(directory)
        if path == root:
            raise CasstorError(f"{directory!r}: {error}")
        failed.append(SourceFile(path, _file_id(prefix, root, path) + "/", UNKNOWN_SIZE, error))
    return failed


def _tree(walker: _Walker, paths: list[str], root: str, prefix: str, source: str) -> list[SourceFile]:
    """The files of a directory or glob source, then its directories that could not be listed."""
    files = (_listed(sorted(paths), root, prefix, False, walker.follow_symlinks)
             + _failed_directories(walker, root, prefix))
    if not files:
        raise CasstorError(f"{source!r} {'holds' if os.path.isdir(source) else 'matches'} no regular files: "
                           f"nothing to ingest")
    return files


def _located(location: Location, prefix: str) -> list[SourceFile]:
    """The files a URL names, as entries whose ``path`` is each file's URL."""
    root, found = list_files(location)
    return [SourceFile(location.url(path), path_to_id(prefix + posixpath.relpath(path, root or "/")), size)
            for path, size in found]


def list_source(source: str | os.PathLike | Sequence[str | os.PathLike] | Location, prefix: str = "",
                root: str | os.PathLike | None = None, follow_symlinks: bool = False) -> list[SourceFile]:
    """The files of ``source`` with their store ids (see the module docstring).

    ``follow_symlinks``: enter symlinked directories below the root (each
    directory still listed once, so a link cycle cannot loop) and list
    symlinks to files as the files they point to; without it such a link is
    an entry with ``skipped`` set.

    Example::

        >>> list_source("data/**/*.bin", prefix="d/")                    # doctest: +SKIP
        [SourceFile(path='/home/me/data/x/a.bin', file_id='d/x/a.bin', size=1200, error=None)]

    Failures: see the module docstring.
    """
    if isinstance(source, Location):
        return _located(source, prefix)
    walker = _Walker(follow_symlinks)
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if os.path.isdir(text):
            base = os.path.abspath(root or text)
            return _tree(walker, list(walker.files(text, set())), base, prefix, text)
        if os.path.isfile(text):
            return _listed([text], os.path.abspath(root or os.path.dirname(text) or "."), prefix, False,
                           follow_symlinks)
        if not glob.has_magic(text):
            raise CasstorError(f"{text!r}: no such file or directory")
        glob_root, segments = _glob_split(text)
        base = os.path.abspath(root or glob_root)
        visited: set[tuple] = set()  # one set for all matches: a directory inside another match is listed once
        expanded = [p for match in sorted(walker.glob(glob_root, segments))
                    for p in (walker.files(match, visited) if walker.enters(match) else [match])]
        return _tree(walker, expanded, base, prefix, text)
    paths = [os.path.abspath(os.fspath(p)) for p in source]
    if not paths:
        raise CasstorError("the list of paths to ingest is empty")
    base = os.path.abspath(root) if root else os.path.commonpath([os.path.dirname(p) for p in paths])
    return _listed(paths, base, prefix, True, follow_symlinks)
