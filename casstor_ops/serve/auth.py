"""The bearer token (``--token-file``): every request must carry ``Authorization: Bearer <token>``.

The token is the file's content with surrounding white space removed, read
once at start; requests are compared with :func:`hmac.compare_digest`, so
the time taken does not tell how much of a guess was right.

Example::

    >>> token = Token(b"s3cret")
    >>> token.allows("Bearer s3cret"), token.allows("Bearer guess"), token.allows(None)
    (True, False, False)

Failures: :func:`read_token` raises :class:`~casstor_ops.errors.CasstorError`
(exit 2) for a file that others may read (it is a secret, kept like a
password file: :func:`~casstor_ops.cluster.secret_files.read_private_file`),
that is not a regular file, that cannot be read or that holds no token.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from casstor_ops.cluster.secret_files import read_private_file
from casstor_ops.errors import EXIT_USAGE, CasstorError

SCHEME = "bearer"


class Token:
    """The one token the server accepts."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def allows(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries the token (the scheme's case does not matter)."""
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != SCHEME:
            return False
        # compare_digest needs bytes for non-ASCII; a header value is latin-1 on the wire.
        return hmac.compare_digest(given.strip().encode("latin-1", "replace"), self._secret)


def read_token(path: str | Path) -> Token:
    """The token in ``path`` (surrounding white space, e.g. the final newline, removed); a file only its owner may
    read, as a password file."""
    secret = read_private_file(str(path), "--token-file").strip()
    if not secret:
        raise CasstorError(f"the token file {str(path)!r} is empty", EXIT_USAGE)
    if any(byte < 0x21 or byte > 0x7e for byte in secret):
        raise CasstorError(f"the token in {str(path)!r} must be printable ASCII without spaces "
                           f"(it travels in an HTTP header)", EXIT_USAGE)
    return Token(secret)
