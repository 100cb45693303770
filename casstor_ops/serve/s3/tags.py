"""S3's tags: the rules of a tag set, read from an ``x-amz-tagging`` header or a ``Tagging`` XML body.

At most 10 tags on an object (50 on a bucket), a key of 1 to 128 characters,
a value of at most 256, each key once (:mod:`.tagging` answers the tagging
operations; :mod:`.objects` and :mod:`.multipart` read the header).

Example::

    >>> tags_of_header("project=x&draft")
    {'project': 'x', 'draft': ''}
    >>> tag_set(b"<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>")
    {'a': '1'}

Failures (:class:`~.errors.S3Error`): a tag set that breaks a rule above:
InvalidTag; a body that is not well-formed XML: MalformedXML.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.serve.s3.xml import parse

MAX_TAGS, MAX_BUCKET_TAGS, MAX_KEY, MAX_VALUE = 10, 50, 128, 256  # S3's limits


def _invalid_tag(message: str) -> S3Error:
    return S3Error("InvalidTag", message)


def checked(pairs: list[tuple[str, str]], limit: int = MAX_TAGS) -> dict[str, str]:
    """``pairs`` as tags, if S3 accepts them (see the module docstring)."""
    if len(pairs) > limit:
        raise _invalid_tag(f"Tags cannot be more than {limit}")
    tags = dict(pairs)
    if len(tags) != len(pairs):
        raise _invalid_tag("Cannot provide multiple Tags with the same key")
    for key, value in pairs:
        if not 1 <= len(key) <= MAX_KEY:
            raise _invalid_tag(f"The TagKey you have provided is invalid (1 to {MAX_KEY} characters)")
        if len(value) > MAX_VALUE:
            raise _invalid_tag(f"The TagValue you have provided is invalid (at most {MAX_VALUE} characters)")
    return tags


def tags_of_header(header: str | None) -> dict[str, str]:
    """The tags of an ``x-amz-tagging`` header (URL-encoded ``key=value`` pairs; a key alone has value ``''``)."""
    return checked(parse_qsl(header or "", keep_blank_values=True))


def tag_set(body: bytes, limit: int = MAX_TAGS) -> dict[str, str]:
    """The tags of a ``Tagging`` XML body."""
    try:
        root = parse(body)
    except (ValueError, SyntaxError):
        raise S3Error("MalformedXML", "The XML you provided was not well-formed.") from None
    return checked([(tag.findtext("Key") or "", tag.findtext("Value") or "") for tag in root.iter("Tag")], limit)
