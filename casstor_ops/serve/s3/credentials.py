"""The S3 users: access key -> secret key, from a file in the aws CLI's credentials format (``--s3-credentials``).

Example file (``chmod 600``)::

    [alice]
    aws_access_key_id = AKIAALICE
    aws_secret_access_key = s3cr3t

Example::

    >>> read_credentials("/home/me/.casstor-s3")          # doctest: +SKIP
    {'AKIAALICE': 's3cr3t'}

Failures: :class:`~casstor_ops.errors.CasstorError` (exit 2) for a file
others may read (:func:`~casstor_ops.cluster.secret_files.read_private_file`),
one that is not in that format, a section without both keys, an access key
given twice, or a file with no user at all.
"""

from __future__ import annotations

import configparser

from casstor_ops.cluster.secret_files import read_private_file
from casstor_ops.errors import EXIT_USAGE, CasstorError

SETTING = "--s3-credentials"


def read_credentials(path: str) -> dict[str, str]:
    """Every user of ``path``: access key id -> secret access key."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_private_file(path, SETTING).decode("utf-8"))
    except (configparser.Error, UnicodeDecodeError) as err:
        raise CasstorError(f"{SETTING}={path}: not an aws credentials file: {str(err).splitlines()[0]}",
                           EXIT_USAGE) from None
    secrets: dict[str, str] = {}
    for name in parser.sections():
        section = parser[name]
        key, secret = section.get("aws_access_key_id"), section.get("aws_secret_access_key")
        if not key or not secret:
            raise CasstorError(f"{SETTING}={path}: [{name}] needs aws_access_key_id and aws_secret_access_key",
                               EXIT_USAGE)
        if key in secrets:
            raise CasstorError(f"{SETTING}={path}: the access key of [{name}] is given twice", EXIT_USAGE)
        secrets[key.strip()] = secret.strip()
    if not secrets:
        raise CasstorError(f"{SETTING}={path}: no [user] section with aws_access_key_id and aws_secret_access_key",
                           EXIT_USAGE)
    return secrets
