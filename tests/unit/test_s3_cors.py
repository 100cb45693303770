"""CORS rules without a node: a configuration parsed and refused as S3 does, kept as JSON and read back, and the
first matching rule's headers for an origin, a method and requested headers (wildcard origins as the suite's
``test_cors_origin_response`` uses them)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from cassandra import OperationTimedOut
from starlette.responses import Response

from casstor_ops.serve.s3.cors import Cors, allowed, dumps, loads, parse_rules
from casstor_ops.serve.s3.errors import S3Error


def _config(*rules: str) -> bytes:
    return ('<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            + "".join(f"<CORSRule>{rule}</CORSRule>" for rule in rules) + "</CORSConfiguration>").encode()


def _rule(origin: str, *methods: str, extra: str = "") -> str:
    return f"<AllowedOrigin>{origin}</AllowedOrigin>" + "".join(
        f"<AllowedMethod>{m}</AllowedMethod>" for m in methods) + extra


RULES = parse_rules(_config(_rule("*suffix", "GET"), _rule("start*end", "GET"), _rule("prefix*", "GET"),
                            _rule("*.put", "PUT"),
                            _rule("https://app.example", "GET", "PUT", extra="<AllowedHeader>x-amz-*</AllowedHeader>"
                                  "<ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>300</MaxAgeSeconds><ID>app</ID>")))


@pytest.mark.parametrize("origin,method,wanted", [
    ("foo.suffix", "GET", "foo.suffix"), ("foo.bar", "GET", None), ("foo.suffix.get", "GET", None),
    ("startend", "GET", "startend"), ("start12end", "GET", "start12end"), ("0start12end", "GET", None),
    ("prefix", "GET", "prefix"), ("bla.prefix", "GET", None), ("foo.put", "GET", None), ("foo.put", "PUT", "foo.put"),
    ("foo.suffix", "PUT", None),
])
def test_the_first_rule_allowing_an_origin_and_method_answers(origin: str, method: str, wanted: str | None):
    headers = allowed(RULES, origin, method, "")
    assert (headers or {}).get("access-control-allow-origin") == wanted
    if wanted:
        assert headers["access-control-allow-methods"] == method


def test_requested_headers_must_all_be_allowed_and_the_rules_options_are_answered():
    headers = allowed(RULES, "https://app.example", "PUT", "X-Amz-Date, x-amz-meta-a")
    assert headers == {"access-control-allow-origin": "https://app.example",
                       "access-control-allow-methods": "GET, PUT",
                       "access-control-allow-headers": "x-amz-date, x-amz-meta-a",
                       "access-control-expose-headers": "ETag", "access-control-max-age": "300",
                       "access-control-allow-credentials": "true",
                       "vary": "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"}
    assert allowed(RULES, "https://app.example", "PUT", "x-amz-date, content-md5") is None
    assert allowed(RULES, "foo.suffix", "GET", "x-amz-meta-header2") is None  # no AllowedHeader: none allowed
    wildcard = allowed(parse_rules(_config(_rule("*", "GET"))), "example.origin", "GET", "")
    assert wildcard["access-control-allow-origin"] == "*" and "access-control-allow-credentials" not in wildcard


def test_rules_are_kept_as_json_and_read_back_equal():
    assert loads(dumps(RULES)) == RULES
    assert loads(None) == []
    assert RULES[4].xml() == {"ID": "app", "AllowedHeader": ["x-amz-*"], "AllowedMethod": ["GET", "PUT"],
                              "AllowedOrigin": ["https://app.example"], "ExposeHeader": ["ETag"],
                              "MaxAgeSeconds": 300}


@pytest.mark.parametrize("body,code", [
    (b"<CORSConfiguration>", "MalformedXML"), (_config(), "MalformedXML"),
    (_config("<AllowedMethod>GET</AllowedMethod>"), "MalformedXML"),
    (_config(_rule("a", "PATCH")), "InvalidRequest"), (_config(_rule("*a*", "GET")), "InvalidRequest"),
    (_config(_rule("a", "GET", extra="<MaxAgeSeconds>soon</MaxAgeSeconds>")), "MalformedXML"),
    (_config(*[_rule("a", "GET")] * 101), "InvalidRequest"), (b"<Other/>", "MalformedXML"),
])
def test_a_configuration_s3_refuses_is_refused(body: bytes, code: str):
    with pytest.raises(S3Error) as err:
        parse_rules(body)
    assert err.value.code == code


class TimingOutSession:
    """Prepares anything; every read times out, as on an overloaded node."""

    def prepare(self, cql: str) -> str:
        return cql

    def execution_profile_clone_update(self, profile: object, **changes: object) -> dict:
        return dict(changes)

    def execute(self, statement: str, values: tuple = ()) -> None:
        raise OperationTimedOut("injected: the node did not answer")


def test_an_answer_stands_without_cors_headers_when_the_rules_cannot_be_read():
    """Injects a read timeout into the rules' read made for an answer to an Origin: the answer must go out as it
    is (without Access-Control-* headers, so the browser refuses it), not become a 500."""
    with ThreadPoolExecutor(1) as pool:
        cors = Cors(SimpleNamespace(session=TimingOutSession()), None, None, pool)
        response = Response(b"body", status_code=200)
        asyncio.run(cors.decorate(response, "https://app.example", "GET", "/bucket/key"))
    assert response.status_code == 200 and not any(h.startswith("access-control-") for h in response.headers)
