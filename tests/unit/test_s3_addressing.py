"""Virtual-hosted-style addressing: which Host names which bucket (no server, no node)."""

from __future__ import annotations

import pytest

from casstor_ops.errors import CasstorError
from casstor_ops.serve.s3.addressing import Addressing


@pytest.mark.parametrize("host, bucket", [
    ("photos.s3.example.com", "photos"),
    ("photos.s3.example.com:9000", "photos"),
    ("Photos.S3.Example.COM.", "photos"),          # host names are case-blind; a trailing dot is the root
    ("my.dotted.bucket.s3.example.com", "my.dotted.bucket"),
    ("b.s3.internal", "b"),                          # the second domain
    ("s3.example.com", None),                        # the domain itself: path-style
    ("s3.example.com:9000", None),
    ("photos.example.com", None),                    # under no configured domain
    ("xs3.example.com", None),                       # a suffix, not a subdomain
    ("127.0.0.1:9000", None),
    ("[::1]:9000", None),
    ("", None),
    (None, None),
])
def test_the_bucket_a_host_names(host, bucket) -> None:
    assert Addressing.parse(["s3.example.com", "S3.Internal"]).bucket_of(host) == bucket


def test_the_longest_domain_decides() -> None:
    """With both example.com and s3.example.com configured, b.s3.example.com is bucket b, not b.s3."""
    assert Addressing.parse(["example.com", "s3.example.com"]).bucket_of("b.s3.example.com") == "b"


def test_a_path_is_made_path_style_only_for_a_bucket_host() -> None:
    addressing = Addressing.parse(["s3.test"])
    assert addressing.path_style("b.s3.test", "/dir/k") == "/b/dir/k"
    assert addressing.path_style("b.s3.test", "/") == "/b/"           # the bucket itself
    assert addressing.path_style("s3.test", "/b/dir/k") == "/b/dir/k"
    assert Addressing().path_style("b.s3.test", "/dir/k") == "/dir/k"  # no --s3-domain: path-style only


@pytest.mark.parametrize("domain", ["", "not a domain", "-a.com", "a_b.com", "a..com", "a.com:9000", "x" * 64])
def test_a_domain_that_is_not_a_host_name_is_refused(domain) -> None:
    with pytest.raises(CasstorError) as refused:
        Addressing.parse([domain])
    assert refused.value.exit_code == 2 and "--s3-domain" in str(refused.value)
