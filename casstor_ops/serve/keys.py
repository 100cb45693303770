"""A request's key: the raw URL path, percent-decoded as UTF-8, is the file ID.

The raw path (ASGI ``raw_path``) is decoded here, once, so ``%2F`` is ``/``
(the ID ``a/b``, as ``/a/b``), ``%20`` a space and ``%C3%A9`` an ``é``; no
dot segment is resolved and nothing is joined to a directory: the key goes
to the store as an ID and nowhere else. The store's own rules then apply
(:func:`~casstor_ops.store.ids.check_id`: a new ID has no empty, ``.`` or
``..`` segment and no control character).

Example::

    >>> parse_key(b"/photos/caf%C3%A9%201.jpg")
    'photos/café 1.jpg'
    >>> parse_key(b"/a%2Fb")
    'a/b'

Failures: an empty key, a NUL, or bytes that are not UTF-8 raise
:class:`~casstor_ops.errors.CasstorError` with exit code 2 (HTTP 400).
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from casstor_ops.errors import EXIT_USAGE, CasstorError


def parse_key(raw_path: bytes) -> str:
    """The file ID a request's raw path names (without its query string)."""
    encoded = raw_path[1:] if raw_path.startswith(b"/") else raw_path
    try:
        key = unquote_to_bytes(encoded).decode("utf-8")
    except UnicodeDecodeError:
        raise CasstorError(f"the key {encoded.decode('latin-1')!r} is not UTF-8 once percent-decoded",
                           EXIT_USAGE) from None
    if not key:
        raise CasstorError("empty key: give the file ID as the path, e.g. /photos/a.jpg", EXIT_USAGE)
    if "\x00" in key:
        raise CasstorError(f"the key {key!r} contains a NUL character", EXIT_USAGE)
    return key
