"""Virtual-hosted-style addressing (``casstor serve --s3 --s3-domain DOMAIN``) with real clients.

The clients address ``http://BUCKET.s3.test:PORT/KEY``, as boto3, the aws
CLI and Hadoop's s3a do by default. No resolver here knows ``*.s3.test``, so
each client is given the server as its HTTP proxy: it then sends the
request to the server in absolute form (``GET http://b.s3.test:PORT/k``) with
that ``Host``, which is what the server would get from a wildcard DNS name.
The server also answers path-style requests, on the same objects.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.client import Config
from botocore.exceptions import ClientError

from casstor_ops.serve.process import ServerProcess

from .s3_support import AWS, KEY, SECRET, client, error_code, spark_s3a_roundtrip
from .support import run_casstor

DOMAIN = "s3.test"
BUCKET = "hosted"


@pytest.fixture(scope="module")
def server(cql, credentials: Path) -> Iterator[ServerProcess]:
    # The access log shows each request's path as sent: without its bucket when the Host named it.
    running = ServerProcess("--s3", "--s3-credentials", str(credentials), "--s3-domain", DOMAIN, "--access-log")
    yield running
    code, log = running.stop()
    print(log)  # shown with a failure
    assert code == 0, log


def _logged(server: ServerProcess, line: str, timeout_s: float = 10.0) -> str:
    """The server's log once it holds ``line`` (an access-log line is written after its answer was sent)."""
    deadline = time.monotonic() + timeout_s
    while line not in server.log and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.log


def _proxy(server: ServerProcess) -> str:
    return f"http://{server.host}:{server.port}"


def _hosted(server: ServerProcess, domain: str = DOMAIN):
    """boto3 addressing buckets as subdomains of ``domain``, its requests sent to ``server`` as their proxy."""
    return boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://{domain}:{server.port}",
                        aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                        config=Config(s3={"addressing_style": "virtual"}, signature_version="s3v4",
                                      retries={"max_attempts": 1}, proxies={"http": _proxy(server)}))


def test_boto3_addresses_buckets_by_host_and_sees_what_path_style_sees(server, tmp_path: Path) -> None:
    """Every kind of request boto3 sends with virtual-hosted addressing (bucket, object, range, listing,
    multipart, presigned URL, copy, batch delete) reaches the bucket its Host names; a path-style client on the
    same server reads the same objects."""
    hosted, plain = _hosted(server), client(server)
    hosted.create_bucket(Bucket=BUCKET)
    assert BUCKET in [b["Name"] for b in plain.list_buckets()["Buckets"]]
    hosted.put_object(Bucket=BUCKET, Key="dir/a.txt", Body=b"hello, host", Metadata={"color": "blue"})
    assert '"PUT /dir/a.txt"' in _logged(server, '"PUT /dir/a.txt"')
    assert plain.get_object(Bucket=BUCKET, Key="dir/a.txt")["Body"].read() == b"hello, host"
    got = hosted.get_object(Bucket=BUCKET, Key="dir/a.txt", Range="bytes=7-10")
    assert got["Body"].read() == b"host" and got["Metadata"] == {"color": "blue"}
    listed = hosted.list_objects_v2(Bucket=BUCKET, Delimiter="/")
    assert [p["Prefix"] for p in listed["CommonPrefixes"]] == ["dir/"]

    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(11 * 1024 * 1024))
    hosted.upload_file(str(big), BUCKET, "big.bin", Config=TransferConfig(multipart_threshold=5 * 1024 * 1024,
                                                                         multipart_chunksize=5 * 1024 * 1024))
    assert hosted.head_object(Bucket=BUCKET, Key="big.bin")["ETag"].endswith('-3"')
    assert plain.get_object(Bucket=BUCKET, Key="big.bin")["Body"].read() == big.read_bytes()

    url = hosted.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "dir/a.txt"})
    assert url.startswith(f"http://{BUCKET}.{DOMAIN}:{server.port}/dir/a.txt?")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": _proxy(server)}))
    assert opener.open(url, timeout=30).read() == b"hello, host"

    hosted.copy_object(Bucket=BUCKET, Key="copy.txt", CopySource={"Bucket": BUCKET, "Key": "dir/a.txt"})
    assert plain.get_object(Bucket=BUCKET, Key="copy.txt")["Body"].read() == b"hello, host"
    hosted.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in ("dir/a.txt", "big.bin", "copy.txt")]})
    hosted.delete_bucket(Bucket=BUCKET)
    assert BUCKET not in [b["Name"] for b in plain.list_buckets()["Buckets"]]


def test_a_host_under_no_configured_domain_is_path_style(server) -> None:
    """Injects a bucket named as a subdomain of a domain the server was not given; checks the request is taken
    path-style (its first path segment the bucket: NoSuchBucket), never as that bucket's."""
    plain = client(server)
    plain.create_bucket(Bucket="elsewhere")
    plain.put_object(Bucket="elsewhere", Key="k", Body=b"x")
    with pytest.raises(ClientError) as refused:
        _hosted(server, "other.test").get_object(Bucket="elsewhere", Key="k")
    assert error_code(refused) == "NoSuchBucket"
    plain.delete_object(Bucket="elsewhere", Key="k")
    plain.delete_bucket(Bucket="elsewhere")


def test_the_aws_cli_copies_and_lists_with_virtual_hosted_addressing(server, credentials: Path,
                                                                     tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("[profile test]\ns3 =\n    addressing_style = virtual\n")
    env = {**os.environ, "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_PROFILE": "test",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": str(config), "HTTP_PROXY": _proxy(server),
           "NO_PROXY": ""}
    source = tmp_path / "f.bin"
    source.write_bytes(os.urandom(100_000))
    back = tmp_path / "back.bin"

    def aws(*args: str) -> str:
        return subprocess.run([AWS, "--endpoint-url", f"http://{DOMAIN}:{server.port}", *args], env=env,
                              capture_output=True, text=True, timeout=300, check=True).stdout

    client(server).create_bucket(Bucket="cli-hosted")
    aws("s3", "cp", str(source), "s3://cli-hosted/in/f.bin")
    assert "f.bin" in aws("s3", "ls", "s3://cli-hosted/in/")
    aws("s3", "cp", "s3://cli-hosted/in/f.bin", str(back))
    assert back.read_bytes() == source.read_bytes()
    aws("s3", "rm", "s3://cli-hosted/in/f.bin")
    log = _logged(server, '"PUT /in/f.bin"')
    assert '"PUT /in/f.bin"' in log and '"PUT /cli-hosted/' not in log
    client(server).delete_bucket(Bucket="cli-hosted")


@pytest.mark.slow  # a Spark application: ~1 minute
def test_spark_s3a_with_its_default_virtual_hosted_addressing_round_trips_parquet(server, tmp_path: Path) -> None:
    """Hadoop's s3a with ``fs.s3a.path.style.access=false`` (its default), the server as its proxy."""
    plain = client(server)
    plain.create_bucket(Bucket="sparkhost")
    code, output = spark_s3a_roundtrip(tmp_path, "s3a://sparkhost/frame.parquet", {
        "spark.hadoop.fs.s3a.endpoint": f"http://{DOMAIN}:{server.port}",
        "spark.hadoop.fs.s3a.path.style.access": "false",
        "spark.hadoop.fs.s3a.proxy.host": server.host, "spark.hadoop.fs.s3a.proxy.port": str(server.port)})
    assert code == 0, output[-5000:]
    assert "ROUNDTRIP equal 5000" in output, output[-5000:]
    keys = [o["Key"] for o in plain.list_objects_v2(Bucket="sparkhost", Prefix="frame.parquet/")["Contents"]]
    assert "frame.parquet/_SUCCESS" in keys and any(k.endswith(".parquet") for k in keys), keys
    log = _logged(server, '"PUT /frame.parquet/_SUCCESS"')
    assert '"PUT /frame.parquet/_SUCCESS"' in log and '"PUT /sparkhost/' not in log


@pytest.mark.parametrize("args, message", [
    (["--s3-domain", DOMAIN], "casstor: serve: --s3-domain needs --s3"),
    (["--s3", "--s3-domain", "not a domain"], "casstor: serve: --s3-domain 'not a domain' is not a host name"),
])
def test_a_bad_s3_domain_is_one_line_and_exit_2(credentials: Path, args: list[str], message: str) -> None:
    run = run_casstor("serve", "--port", "0", *(["--s3-credentials", str(credentials)] if "--s3" in args else []),
                      *args, env={"CASSTOR_NODES": "127.0.0.1:1"}, timeout=60)
    assert run.returncode == 2 and run.stdout == b"", run.stderr
    lines = run.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines
