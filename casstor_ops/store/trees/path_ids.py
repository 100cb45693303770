"""File names that are not valid UTF-8, as store IDs and back: a reversible, collision-free escape.

A POSIX file name is bytes; an ID is CQL ``text``, which cannot hold the
lone surrogates (U+DC80..U+DCFF) Python decodes undecodable bytes to
(``surrogateescape``), and :func:`~casstor_ops.store.ids.check_id`
refuses them. A bulk ingest therefore names a path by :func:`path_to_id`
and a bulk restore writes an ID to :func:`id_to_path`:

* each undecodable byte becomes ``U+FFFD`` (the Unicode REPLACEMENT
  CHARACTER) and its two upper-case hex digits: ``b"caf\\xe9.txt"`` is
  stored as ``"caf\\ufffdE9.txt"`` (shown ``caf�E9.txt``);
* a ``U+FFFD`` that is really in a (valid UTF-8) name is doubled when what
  follows it could be read as an escape (another ``U+FFFD``, an escaped
  byte, or two hex digits ``80``..``FF``), so a valid name never maps to the
  ID of another name; anywhere else it is kept as is;
* every other character is kept, so the ID of a valid UTF-8 name without
  ``U+FFFD`` is the name itself (IDs stored before this mapping, and IDs
  given to ``casstor store``, restore to the same path as before).

``U+FFFD`` is the escape because a name that holds one is already the
trace of a lossy conversion (rare), where ``%`` or ``\\`` are common in
real names. The bytes of a path are ``os.fsencode`` of its text, so the
mapping is exact with the UTF-8 file-system encoding Python uses on Linux.

Example::

    >>> path_to_id("caf\\udce9.txt")
    'caf\\ufffdE9.txt'
    >>> id_to_path("caf\\ufffdE9.txt") == "caf\\udce9.txt"
    True

Failures: :func:`id_to_path` raises :class:`~casstor_ops.errors.CasstorError`
for an ID :func:`path_to_id` never makes (e.g. ``"a\\ufffd\\ufffd"``, which
would restore onto the path of ``"a\\ufffd"``); :func:`path_to_id` never fails.
"""

from __future__ import annotations

import re

from casstor_ops.errors import CasstorError

ESCAPE = "\ufffd"
_SURROGATE_BASE = 0xDC00  # surrogateescape decodes byte b (0x80..0xff) to chr(0xDC00 + b)
_ESCAPED_BYTE = re.compile("[89A-F][0-9A-F]")
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def _reads_as_escape(text: str, at: int) -> bool:
    """Whether the encoded text starting at ``at`` could be taken for the rest of an escape."""
    following = text[at:at + 1]
    return (following == ESCAPE or bool(_UNDECODABLE.match(following))
            or bool(_ESCAPED_BYTE.match(text, at)))


def path_to_id(path: str) -> str:
    """The ID text of a path's text (``surrogateescape``-decoded, as ``os`` returns it); see the module docstring.

    Example::

        >>> path_to_id("naïve/日本語"), path_to_id("caf\\udce9")
        ('naïve/日本語', 'caf\\ufffdE9')
    """
    if ESCAPE not in path and not _UNDECODABLE.search(path):  # nearly every path: the ID is the path itself
        return path
    out = []
    for at, ch in enumerate(path):
        if _UNDECODABLE.match(ch):
            out.append(f"{ESCAPE}{ord(ch) - _SURROGATE_BASE:02X}")
        elif ch == ESCAPE and _reads_as_escape(path, at + 1):
            out.append(ESCAPE * 2)
        else:
            out.append(ch)
    return "".join(out)


def id_to_path(file_id: str) -> str:
    """The path text an ID restores to (undecodable bytes as surrogates, for ``os``); inverse of :func:`path_to_id`.

    Example::

        >>> os.fsencode(id_to_path("caf\\ufffdE9.txt"))        # doctest: +SKIP
        b'caf\\xe9.txt'

    Failures: an ID that is not the image of a path raises CasstorError.
    """
    out, at = [], 0
    while at < len(file_id):
        ch = file_id[at]
        if ch == ESCAPE and file_id[at + 1:at + 2] == ESCAPE:
            out.append(ESCAPE)
            at += 2
        elif ch == ESCAPE and _ESCAPED_BYTE.match(file_id, at + 1):
            out.append(chr(_SURROGATE_BASE + int(file_id[at + 1:at + 3], 16)))
            at += 3
        else:
            out.append(ch)
            at += 1
    path = "".join(out)
    if path_to_id(path) != file_id:
        raise CasstorError(f"id {file_id!r} has a U+FFFD escape no path maps to: refusing to guess its path "
                           f"(it would restore onto the path of {path_to_id(path)!r})")
    return path
