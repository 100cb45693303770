"""CORS: a bucket's rules for browsers on other origins (Put/Get/DeleteBucketCors), the OPTIONS preflight, and
the ``Access-Control-*`` headers of the answers to them.

A bucket's rules are kept as JSON in ``buckets.cors`` (null: none; the
row's, so DeleteBucket drops them too). A rule allows its origins
(``AllowedOrigin``, each with at most one ``*`` wildcard) to use its
methods (``AllowedMethod``: GET, PUT, POST, DELETE, HEAD) with its request
headers (``AllowedHeader``, case-insensitive, ``*`` wildcards), and lets
the browser show the ``ExposeHeader`` ones, cached ``MaxAgeSeconds``. The
first rule that matches a request's ``Origin``, method and requested headers
is the one answered, as in S3.

* The preflight, ``OPTIONS /bucket[/key]`` with ``Origin`` and
  ``Access-Control-Request-Method``, is answered unsigned (a browser sends no
  credentials with it): 200 with the rule's headers, 403 AccessForbidden
  when no rule allows it, 400 BadRequest without those two headers.
* Any other request with an ``Origin`` gets the matching rule's headers on its
  answer, an error's included (so a page can read S3's error document).

Example::

    >>> rules = parse_rules(b"<CORSConfiguration><CORSRule><AllowedOrigin>https://*.example.com</AllowedOrigin>"
    ...                     b"<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>")
    >>> headers = allowed(rules, "https://app.example.com", "GET", "")
    >>> headers["access-control-allow-origin"], headers["access-control-allow-methods"]
    ('https://app.example.com', 'GET')

Failures: a configuration that is not well-formed or has no rule:
MalformedXML; an unknown method, an origin or header with two wildcards,
more than 100 rules: InvalidRequest; a bucket without rules:
NoSuchCORSConfiguration (GetBucketCors); an unknown bucket: NoSuchBucket.
Reading a bucket's rules for an answer's headers failing leaves the answer
without them (logged): the browser then refuses it, as it would with no rule.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from starlette.responses import Response

from casstor_ops.serve.bridge import on_pool
from casstor_ops.serve.s3.buckets import Bucket, Buckets
from casstor_ops.serve.s3.errors import S3Error, no_such_bucket
from casstor_ops.serve.s3.objects import xml_response
from casstor_ops.serve.s3.xml import document, parse
from casstor_ops.serve.status import one_line
from casstor_ops.serve.writes import Writes
from casstor_ops.store.api import Store
from casstor_ops.store.cql.statements import Statements

log = logging.getLogger("casstor.serve")

METHODS = ("GET", "PUT", "POST", "DELETE", "HEAD")
MAX_RULES = 100
MAX_CONFIG_BYTES = 64 << 10  # S3's limit of a CORS configuration
_VARY = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"


@dataclass(frozen=True)
class Rule:
    """One CORSRule."""

    origins: tuple[str, ...]
    methods: tuple[str, ...]
    headers: tuple[str, ...] = ()
    expose: tuple[str, ...] = ()
    max_age: int | None = None
    id: str | None = None

    def allows(self, origin: str, method: str, requested: Sequence[str]) -> bool:
        return (method in self.methods and any(_matches(o, origin) for o in self.origins)
                and all(any(_matches(h.lower(), r) for h in self.headers) for r in requested))

    def xml(self) -> dict:
        return {"ID": self.id, "AllowedHeader": list(self.headers), "AllowedMethod": list(self.methods),
                "AllowedOrigin": list(self.origins), "ExposeHeader": list(self.expose),
                "MaxAgeSeconds": self.max_age}


def _matches(pattern: str, value: str) -> bool:
    """``value`` matches ``pattern``, which may hold one ``*`` standing for any run of characters."""
    head, star, tail = pattern.partition("*")
    if not star:
        return value == pattern
    return len(value) >= len(head) + len(tail) and value.startswith(head) and value.endswith(tail)


def parse_rules(body: bytes) -> list[Rule]:
    """The rules of a PutBucketCors body (see the module docstring for its refusals)."""
    try:
        root = parse(body)
    except (ValueError, SyntaxError):
        root = None
    if root is None or root.tag != "CORSConfiguration" or root.find("CORSRule") is None:
        raise S3Error("MalformedXML", "The XML you provided was not well-formed or did not validate against "
                                      "our published schema.")
    rules = [_rule(element) for element in root.iter("CORSRule")]
    if len(rules) > MAX_RULES:
        raise S3Error("InvalidRequest", f"A CORS configuration has at most {MAX_RULES} rules.")
    return rules


def _rule(element) -> Rule:
    def texts(name: str) -> tuple[str, ...]:
        return tuple((child.text or "").strip() for child in element.findall(name))

    rule = Rule(texts("AllowedOrigin"), texts("AllowedMethod"), texts("AllowedHeader"), texts("ExposeHeader"),
                id=element.findtext("ID"))
    if not rule.origins or not rule.methods:
        raise S3Error("MalformedXML", "A CORSRule needs an AllowedOrigin and an AllowedMethod.")
    for method in rule.methods:
        if method not in METHODS:
            raise S3Error("InvalidRequest", f"Found unsupported HTTP method in CORS config. Unsupported method is "
                                            f"{method}")
    for value in rule.origins + rule.headers:
        if value.count("*") > 1:
            raise S3Error("InvalidRequest", f'"{value}" can not have more than one wildcard.')
    max_age = element.findtext("MaxAgeSeconds")
    if max_age is not None:
        if not max_age.strip().isdigit():
            raise S3Error("MalformedXML", "MaxAgeSeconds must be a number of seconds.")
        rule = Rule(rule.origins, rule.methods, rule.headers, rule.expose, int(max_age), rule.id)
    return rule


def allowed(rules: Sequence[Rule], origin: str, method: str, requested: str) -> dict[str, str] | None:
    """The ``Access-Control-*`` headers of the first rule allowing ``origin`` to use ``method`` with the
    ``requested`` headers (an ``Access-Control-Request-Headers`` value); None if no rule does."""
    names = [name.strip().lower() for name in requested.split(",") if name.strip()]
    rule = next((r for r in rules if r.allows(origin, method, names)), None)
    if rule is None:
        return None
    wildcard = "*" in rule.origins
    headers = {"access-control-allow-origin": "*" if wildcard else origin,
               "access-control-allow-methods": ", ".join(rule.methods)}
    if names:
        headers["access-control-allow-headers"] = ", ".join(names)
    if rule.expose:
        headers["access-control-expose-headers"] = ", ".join(rule.expose)
    if rule.max_age is not None:
        headers["access-control-max-age"] = str(rule.max_age)
    if not wildcard:
        headers["access-control-allow-credentials"] = "true"
    headers["vary"] = _VARY
    return headers


def dumps(rules: Sequence[Rule]) -> str:
    return json.dumps([asdict(rule) for rule in rules])


def loads(text: str | None) -> list[Rule]:
    return [Rule(**{name: tuple(value) if isinstance(value, list) else value for name, value in rule.items()})
            for rule in json.loads(text or "[]")]


class Cors:
    """The CORS rules of one store's buckets, and the answers made from them (see the module docstring)."""

    def __init__(self, store: Store, buckets: Buckets, writes: Writes, pool) -> None:
        self._session = store.session
        self._st = Statements.for_session(store.session)
        self._buckets = buckets
        self._writes = writes
        self._pool = pool

    def rules(self, bucket: str) -> list[Rule]:
        """The bucket's rules ([] for none, or no such bucket)."""
        row = self._session.execute(self._st.bucket_cors, (bucket,)).one()
        return loads(row.cors if row is not None else None)

    def _set(self, bucket: str, rules: Sequence[Rule] | None) -> None:
        applied = self._session.execute(self._st.set_bucket_cors, (dumps(rules) if rules else None, bucket)).one()
        if not applied[0]:
            raise no_such_bucket(bucket)

    async def put(self, bucket: str, body: bytes) -> Response:
        """PutBucketCors of ``body`` (checked: :mod:`.request_body`)."""
        if len(body) > MAX_CONFIG_BYTES:
            raise S3Error("MalformedXML", "The XML you provided was too large.")
        rules = parse_rules(body)
        await self._writes.write(lambda lease: self._set(bucket, rules))
        return Response(status_code=200)

    async def get(self, bucket: str) -> Response:
        await on_pool(self._pool, self._buckets.created, bucket)
        rules = await on_pool(self._pool, self.rules, bucket)
        if not rules:
            raise S3Error("NoSuchCORSConfiguration", "The CORS configuration does not exist", f"/{bucket}",
                          BucketName=bucket)
        return xml_response(document("CORSConfiguration", {"CORSRule": [rule.xml() for rule in rules]}))

    async def delete(self, bucket: str) -> Response:
        await self._writes.write(lambda lease: self._set(bucket, None))
        return Response(status_code=204)

    async def preflight(self, headers: Mapping[str, str], path: str) -> Response:
        """The answer to an OPTIONS request (unsigned)."""
        origin, method = headers.get("origin"), headers.get("access-control-request-method")
        if not origin or not method:
            raise S3Error("BadRequest", "Insufficient information. Origin request header and "
                                        "Access-Control-Request-Method are needed.")
        bucket = path.lstrip("/").partition("/")[0]
        rules = await on_pool(self._pool, self.rules, bucket) if bucket else []
        answer = allowed(rules, origin, method, headers.get("access-control-request-headers", ""))
        if answer is None:
            raise S3Error("AccessForbidden", "CORSResponse: This CORS request is not allowed. This is usually "
                                             "because the evaluation of Origin, request method / "
                                             "Access-Control-Request-Method or Access-Control-Request-Headers are "
                                             "not whitelisted by the resource's CORS spec.")
        return Response(status_code=200, headers=answer)

    async def decorate(self, response: Response, origin: str, method: str, path: str,
                       known: Bucket | None = None) -> None:
        """Add the matching rule's headers to the answer of a request from ``origin`` (none if no rule matches,
        or the rules cannot be read now: see the module docstring); ``known``: the bucket's row the request
        read already (its rules are taken from it, no read)."""
        bucket = path.lstrip("/").partition("/")[0]
        if not bucket:
            return
        try:
            rules = loads(known.cors) if known is not None else await on_pool(self._pool, self.rules, bucket)
        except Exception as err:  # noqa: BLE001 - the answer stands; only its CORS headers are left out
            log.warning("%s %r: the bucket's CORS rules could not be read, answered without them: %s", method,
                        path, one_line(err))
            return
        response.headers.update(allowed(rules, origin, method, "") or {})
