"""Password files: secrets kept in files only their owner can read, never on a command line or in a variable.

The same check guards every file casstor reads a secret from
(:func:`read_private_file`: also ``--storage-options-file``).

A password file holds one password on its first line (a trailing newline
is ignored). casstor writes them 0600 in a 0700 directory, atomically (a
temporary file renamed into place), whatever the umask; it reads them only
if no one but the owner can read them, like ssh does for a private key.

Example::

    >>> path = write_secret(Path("/tmp/x/credentials/casstor.password"), new_password())  # doctest: +SKIP
    >>> read_password_file(str(path), "CASSTOR_PASSWORD_FILE")                             # doctest: +SKIP
    'N4f...'

Failures: a file that is missing, unreadable, empty, or readable by its
group or by others raises :class:`~casstor_ops.errors.CasstorError` with the
usage exit code (2), one line naming the setting and the fix, never the
content.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from casstor_ops.cluster.paths import private_dir
from casstor_ops.errors import EXIT_USAGE, CasstorError

PASSWORD_BYTES = 24  # 192 random bits, 32 URL-safe characters


def new_password() -> str:
    """A random password of URL-safe characters only (``[A-Za-z0-9_-]``), so it can stand in a CQL string literal."""
    return secrets.token_urlsafe(PASSWORD_BYTES)


def write_secret(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` as a 0600 file in a 0700 directory, atomically; ``path``.

    The temporary file is created 0600 (``O_EXCL``), so the secret is never
    readable by others, not even for a moment.
    """
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _check_private_file(path: str, setting: str) -> None:
    """Refuse ``path`` unless it is a regular file that no one but its owner may read or change. It only stats
    the file: opening a FIFO would wait for a writer."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise CasstorError(f"{setting}={path}: {err.strerror or err}", EXIT_USAGE) from None
    if not stat.S_ISREG(mode):
        raise CasstorError(f"{setting}={path}: not a regular file", EXIT_USAGE)
    if mode & 0o077:
        raise CasstorError(f"{setting}={path}: others may read or change it (mode {stat.S_IMODE(mode):04o}); "
                           f"run 'chmod 600 {path}'", EXIT_USAGE)


def read_private_file(path: str, setting: str) -> bytes:
    """The content of ``path``, a regular file only its owner may read or change; ``setting`` names where the
    path came from (a variable or an option).

    Example: ``read_private_file("/home/me/.casstor/s3.options", "--storage-options-file")`` (also
    ``casstor serve --token-file``).
    Raises CasstorError (exit 2) when the file is missing, unreadable, not a
    regular file, or open to its group or others (``chmod 600`` fixes that).
    """
    _check_private_file(path, setting)
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise CasstorError(f"{setting}={path}: {err.strerror or err}", EXIT_USAGE) from None


def read_password_file(path: str, setting: str) -> str:
    """The password in ``path`` (first line, without its newline); ``setting`` names where the path came from.

    Example: ``read_password_file("/home/me/.casstor/casstor.password", "CASSTOR_PASSWORD_FILE")``.
    Raises CasstorError (exit 2) when the file is missing, unreadable, empty,
    or open to its group or others (``chmod 600`` fixes that).
    """
    first = read_private_file(path, setting).partition(b"\n")[0].rstrip(b"\r")
    if not first:
        raise CasstorError(f"{setting}={path}: the file is empty (expected the password on its first line)",
                           EXIT_USAGE)
    try:
        return first.decode()
    except UnicodeDecodeError:
        raise CasstorError(f"{setting}={path}: the password is not valid UTF-8", EXIT_USAGE) from None
