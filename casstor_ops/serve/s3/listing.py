"""ListObjectsV2 and ListObjects (v1) on the directory index: never a scan of the store.

With the delimiter ``/`` a page is read from one directory
(``directory_entries`` of ``BUCKET/`` + the prefix's directory, from the
prefix's name or the marker on): its files are Contents, its subdirectory
markers CommonPrefixes (a marker whose files were all removed is left out:
S3 has no empty prefixes). Without a delimiter the walk goes down every marker
in name order (``directory_entries`` from the marker's component on), which
yields keys in S3's order, starting where the marker or continuation token
left off. Another delimiter is grouped from that walk. A page ends at
``max-keys`` (1000 at most) keys and prefixes; its continuation token is the
last key (or prefix) returned, base64. ETags of a page are read by ID and
version, a page's at once (S3 ETags are kept in the version rows, not the index).

Example::

    >>> page = Listing(store).page("photos", prefix="2024/", delimiter="/", after="", max_keys=1000)  # doctest: +SKIP

Failures: a max-keys that is not a number, or a token that is not one this
server made: InvalidArgument. The driver's errors propagate.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import quote

from casstor_ops.serve.s3.checksums import Checksum
from casstor_ops.serve.s3.errors import invalid_argument
from casstor_ops.store.api import Store
from casstor_ops.store.cql.row_requests import results
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.namespace.layout import split_id
from casstor_ops.store.namespace.listing import WALK_AHEAD, Entry, directory_entries, entries_under

T = TypeVar("T")

MAX_KEYS = 1000


@dataclass(frozen=True)
class VersionDigests:
    """What S3 answers of a version's bytes beside its entry: its ETag (the 64-hex file hash if none was kept: a
    file stored by casstor itself) and its checksum (None: none asked for)."""

    etag: str
    checksum: Checksum | None


@dataclass
class Page:
    """One page: the object entries (full IDs) and the common prefixes (bucket-relative), and whether more follow."""

    contents: list[Entry] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    truncated: bool = False
    last: str = ""
    digests: dict[str, VersionDigests] = field(default_factory=dict)


def encode_token(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode("utf-8")).decode("ascii")


def decode_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise invalid_argument("The continuation token provided is incorrect") from None


def max_keys(value: str | None) -> int:
    try:
        wanted = MAX_KEYS if value is None else int(value)
    except ValueError:
        raise invalid_argument("max-keys must be a number") from None
    if wanted < 0:
        raise invalid_argument("max-keys must not be negative")
    return min(wanted, MAX_KEYS)


def encoded(key: str, encoding: str | None) -> str:
    """A key as the response carries it: percent-encoded as S3 does (a space is ``%20``, ``+`` is ``%2B``, ``/``
    stays) when the client asked (``encoding-type=url``)."""
    return quote(key, safe="/") if encoding == "url" else key


def rolled_up(items: Iterable[T], key_of: Callable[[T], str], prefix: str, delimiter: str,
              after: str) -> Iterator[T | str]:
    """``items`` (in key order, each key under ``prefix``) as an S3 listing shows them: an item whose key has
    ``delimiter`` after ``prefix`` is rolled into its common prefix, shown once and only if after ``after`` (a page
    that ended on it goes on past it). Example: ``list(rolled_up(["a", "d/x", "d/y"], str, "", "/", ""))`` ->
    ``['a', 'd/']``."""
    shown = ""
    for item in items:
        key = key_of(item)
        cut = key.find(delimiter, len(prefix)) if delimiter else -1
        if cut < 0:
            yield item
            continue
        common = key[:cut + len(delimiter)]
        if common != shown and common > after:
            shown = common
            yield common


class Listing:
    """The listings of one store's buckets."""

    def __init__(self, store: Store) -> None:
        self._session = store.session
        self._st = Statements.for_session(store.session)

    def page(self, bucket: str, prefix: str, delimiter: str, after: str, limit: int) -> Page:
        """Up to ``limit`` keys and prefixes of ``bucket`` under ``prefix``, after the bucket-relative ``after``."""
        root = bucket + "/"
        page = Page()
        if limit == 0:
            return page  # S3: an empty page that is not truncated (there is no token to go on from)
        # A page reads limit + 1 entries (the one more says it is truncated): each bucket of a split directory is
        # read its share of that (directory_entries' page), not a page each.
        items = (self._one_directory(root, prefix, after, limit + 1) if delimiter == "/"
                 else self._grouped(root, prefix, delimiter, after, limit + 1))
        for item in items:
            if len(page.contents) + len(page.prefixes) == limit:
                page.truncated = True
                break
            if isinstance(item, str):
                page.prefixes.append(item)
                page.last = item
            else:
                page.contents.append(item)
                page.last = item.file.id[len(root):]
        page.digests = self.digests(page.contents)
        return page

    def _one_directory(self, root: str, prefix: str, after: str, wanted: int) -> Iterator[Entry | str]:
        directory, start = split_id(root + prefix)
        relative = directory[len(root):]
        begin = max(start, after[len(relative):]) if after.startswith(relative) else start
        for entry in directory_entries(self._session, self._st, directory, begin, page=wanted):
            if not entry.name.startswith(start):
                return
            key = relative + entry.name
            if key <= after:
                continue
            if entry.is_directory:
                if next(entries_under(self._session, self._st, directory + entry.name), None) is not None:
                    yield key
            else:
                yield entry

    def _grouped(self, root: str, prefix: str, delimiter: str, after: str, wanted: int) -> Iterator[Entry | str]:
        entries = entries_under(self._session, self._st, root + prefix, ahead=WALK_AHEAD, after=root + after,
                                page=wanted)
        return rolled_up(entries, lambda entry: entry.file.id[len(root):], prefix, delimiter, after)

    def digests(self, entries: list[Entry]) -> dict[str, VersionDigests]:
        """Each entry's :class:`VersionDigests` by its ID, read by ID and version, many at once
        (:func:`~casstor_ops.store.cql.row_requests.results`)."""
        read = results(self._session, [Query(self._st.object_digests, (entry.file.id, entry.file.version))
                                       for entry in entries], self._st.named_rows)
        digests = {}
        for entry, rows in zip(entries, read):
            row = rows.one()
            etag = (row.etag if row is not None and row.etag else None) or entry.file.hash.hex()
            digests[entry.file.id] = VersionDigests(etag, Checksum.parse(row.checksum if row is not None else None))
        return digests
