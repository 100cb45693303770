"""Virtual-hosted-style addressing: a request's bucket named by its ``Host``, as S3 SDKs address by default.

S3 names a bucket in one of two ways. Path-style, ``http://HOST/BUCKET/KEY``,
is what this server always answers. Virtual-hosted style,
``http://BUCKET.DOMAIN/KEY``, is the default of the AWS SDKs for names that are
valid host names, of Hadoop's s3a (``fs.s3a.path.style.access=false``) and
of DuckDB. It needs a wildcard DNS name ``*.DOMAIN`` for the server, and
the server told which domains are its own (``casstor serve --s3 --s3-domain
DOMAIN``, as MinIO's ``MINIO_DOMAIN``).

:class:`Addressing` turns such a request's path into the path-style one
(``/BUCKET`` + path) that the handlers route on. Everything else keeps its
path: a request to ``DOMAIN`` itself, to an IP address, or to a host under
no configured domain. The signature is checked against the path the
client sent (SigV4 signs that path and the ``Host``), never the mapped one.

Example::

    >>> addressing = Addressing.parse(["s3.example.com"])
    >>> addressing.path_style("photos.s3.example.com:8080", "/2024/a.jpg")
    '/photos/2024/a.jpg'
    >>> addressing.path_style("s3.example.com", "/photos/2024/a.jpg")
    '/photos/2024/a.jpg'

Failures: :meth:`Addressing.parse` raises :class:`~casstor_ops.errors.CasstorError` (exit status 2) for a
domain that is not a host name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from casstor_ops.errors import EXIT_USAGE, CasstorError

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


@dataclass(frozen=True)
class Addressing:
    """The domains whose subdomains name buckets (none: path-style only)."""

    domains: tuple[str, ...] = ()

    @classmethod
    def parse(cls, domains: Iterable[str]) -> Addressing:
        """The addressing of ``--s3-domain`` values (host names, any case, no port); CasstorError for another."""
        names = []
        for domain in domains:
            name = domain.strip().lower().rstrip(".")
            if len(name) > 253 or not _DOMAIN.fullmatch(name):
                raise CasstorError(f"serve: --s3-domain {domain!r} is not a host name (e.g. s3.example.com)",
                                   EXIT_USAGE)
            names.append(name)
        # The longest first: with s3.example.com and example.com, b.s3.example.com is bucket b.
        return cls(tuple(sorted(set(names), key=len, reverse=True)))

    def bucket_of(self, host: str | None) -> str | None:
        """The bucket a ``Host`` header names (``BUCKET.DOMAIN[:PORT]``); None when it names none."""
        if not self.domains or not host or host.startswith("["):  # an IPv6 literal is no bucket's name
            return None
        name = host.rpartition(":")[0] if ":" in host else host
        name = name.lower().rstrip(".")
        for domain in self.domains:
            if name.endswith("." + domain):
                return name[:-len(domain) - 1]
        return None

    def path_style(self, host: str | None, path: str) -> str:
        """``path`` (decoded) as a path-style request would have it: ``/BUCKET`` + ``path`` when ``host`` names the
        bucket, else ``path`` itself."""
        bucket = self.bucket_of(host)
        if bucket is None:
            return path
        return f"/{bucket}{path}" if path.startswith("/") else f"/{bucket}/{path}"
