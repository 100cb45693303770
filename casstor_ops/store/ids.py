"""File IDs: which strings can name a file (:func:`check_id`), for every writer and reader of the store.

Example::

    >>> check_id("photos/2024/a.jpg", storing=True)
    'photos/2024/a.jpg'

Failures: an ID that cannot name a file raises
:class:`~casstor_ops.errors.CasstorError` with one line (exit 2).
"""

from __future__ import annotations

import unicodedata

from casstor_ops.errors import EXIT_USAGE, CasstorError

# S3's limit for a new key; Cassandra refuses a partition key over 64 KiB only when the row is written (a 503 that a
# client retries for ever, leaving blocks behind each time), so the store refuses far below it, up front. An ID
# stored before the rule keeps being readable; one over Cassandra's limit can name nothing.
MAX_ID_BYTES = 1024
CASSANDRA_KEY_BYTES = 65535


def check_id(file_id: str, storing: bool = False) -> str:
    """``file_id`` if it can name a file; ``storing`` adds the rules for a new ID.

    Every ID must be a non-empty string without NUL, of at most
    Cassandra's 65,535 key bytes in UTF-8. A new ID (``put``) must be at
    most ``MAX_ID_BYTES`` (1,024) bytes, and restorable to one path of its own: no empty, ``.`` or
    ``..`` segment between slashes (``a//b``, ``a/./b``, ``a/b/`` and
    ``/a/b`` would all land on ``a/b``, ``a/../b`` on ``b``), no control character
    (a newline would split every one-line listing and message) and no lone
    surrogate (not encodable as UTF-8). IDs stored before these rules stay
    readable and removable. Raises CasstorError (exit 2, one line).

    Example::

        >>> check_id("photos/2024/a.jpg", storing=True)
        'photos/2024/a.jpg'
        >>> check_id("photos//a.jpg", storing=True)          # doctest: +SKIP
        CasstorError: file ID 'photos//a.jpg': empty, '.' and '..' path segments are refused ...
    """
    if not isinstance(file_id, str) or not file_id:
        raise CasstorError("a file ID must be a non-empty string", EXIT_USAGE)
    if "\x00" in file_id:
        raise CasstorError(f"file ID {file_id!r} contains a NUL character", EXIT_USAGE)
    size = len(file_id.encode("utf-8", "surrogatepass"))
    most = MAX_ID_BYTES if storing else CASSANDRA_KEY_BYTES
    if size > most:
        raise CasstorError(f"file ID {file_id[:40]!r}... is {size} bytes long in UTF-8: at most {most} "
                           f"are allowed", EXIT_USAGE)
    if not storing:
        return file_id
    if any(segment in ("", ".", "..") for segment in file_id.split("/")):
        raise CasstorError(f"file ID {file_id!r}: empty, '.' and '..' path segments are refused (a leading, "
                           f"trailing or doubled '/' makes an empty one): they restore to the same path as "
                           f"another ID", EXIT_USAGE)
    bad = next((ch for ch in file_id if unicodedata.category(ch) in ("Cc", "Cs")), None)
    if bad is not None:
        what = "a lone surrogate (not valid UTF-8)" if unicodedata.category(bad) == "Cs" else "a control character"
        raise CasstorError(f"file ID {file_id!r} contains {what} {bad!r}", EXIT_USAGE)
    return file_id
