"""S3's XML bodies: responses built with :mod:`xml.etree.ElementTree` (names escaped by it), and request bodies
parsed (DeleteObjects, CreateBucket) without entities or DTDs.

Example::

    >>> document("Result", {"Key": "a<b&c", "Size": 3})
    b'<?xml version="1.0" encoding="UTF-8"?>\\n<Result xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Key>a&lt;b&amp;c</Key><Size>3</Size></Result>'
    >>> [k.text for k in parse(b"<Delete><Object><Key>a</Key></Object></Delete>").iter("Key")]
    ['a']

A field whose value is a list is repeated (``{"Contents": [{...}, {...}]}``),
a dict is a nested element, None is left out, a bool is ``true``/``false``; a name starting
with ``@`` is an attribute of its parent (``{"Grantee": {"@xsi:type": "CanonicalUser", ...}}``).
A key with a character XML 1.0 cannot carry (a control character) is sent
as it is by S3 too; ElementTree would write it unescaped, so such names are
refused at store time (``store/ids.py`` refuses control characters).

Failures: :func:`parse` raises :class:`ValueError` for a body that is not
well-formed XML or declares a DTD or an entity (the caller answers MalformedXML).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'


def _fill(parent: ET.Element, fields: Mapping[str, Any]) -> None:
    for name, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            if name.startswith("@"):
                parent.set(name[1:], str(item))
                continue
            child = ET.SubElement(parent, name)
            if isinstance(item, Mapping):
                _fill(child, item)
            elif isinstance(item, bool):
                child.text = "true" if item else "false"
            else:
                child.text = str(item)


def document(root: str, fields: Mapping[str, Any], namespace: bool = True, text: str | None = None) -> bytes:
    """An XML document: ``root`` with ``fields`` as children (see the module docstring), or ``text``."""
    element = ET.Element(root, {"xmlns": NAMESPACE} if namespace else {})
    element.text = text
    _fill(element, fields)
    return _DECLARATION + ET.tostring(element, encoding="unicode").encode("utf-8")


def parse(body: bytes) -> ET.Element:
    """A request body's root element, namespaces removed from the tags (S3 accepts both)."""
    if b"<!DOCTYPE" in body or b"<!ENTITY" in body:
        raise ValueError("a DTD or an entity in a request body")
    root = ET.fromstring(body)
    for element in root.iter():
        element.tag = element.tag.rpartition("}")[2]
    return root
