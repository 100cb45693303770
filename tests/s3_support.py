"""The S3 face's test fixtures, shared by every ``tests/test_s3*.py`` (registered in ``tests/conftest.py``).

A 0600 credentials file (two users), one ``casstor serve --s3`` subprocess per module on the test node, a
boto3 client of each user on it (path-style, SigV4, no retries), and the aws CLI that ``make setup`` installs
in a venv of its own (it pins another botocore than s3fs); rclone (Debian's package), configured by
``RCLONE_CONFIG_*`` variables only. Each client takes the server's scheme, and over HTTPS a certificate file to
trust (``ca``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.client import Config

from casstor_ops.serve.process import ServerProcess

from .support import spark_submit

KEY, SECRET = "AKIACASSTORTEST", "casstor-test-secret/key+1"
ALT_KEY, ALT_SECRET = "AKIACASSTORALT", "casstor-alt-secret"  # another user: owns nothing of KEY's
# The aws CLI that `make setup` installs (.venv/tools), else one on the PATH.
AWS = shutil.which("aws", path=os.pathsep.join([str(Path(__file__).resolve().parents[1] / ".venv" / "tools" / "bin"),
                                                 os.environ.get("PATH", "")]))


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("s3") / "credentials"
    path.write_text(f"[test]\naws_access_key_id = {KEY}\naws_secret_access_key = {SECRET}\n"
                    f"[alt]\naws_access_key_id = {ALT_KEY}\naws_secret_access_key = {ALT_SECRET}\n")
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def server(cql, credentials: Path) -> Iterator[ServerProcess]:
    running = ServerProcess("--s3", "--s3-credentials", str(credentials), "--lease-reuse", "2")
    yield running
    code, log = running.stop()
    print(log)  # shown with a failure
    assert code == 0, log


def endpoint(server: ServerProcess) -> str:
    """The server's endpoint URL, ``http://`` or ``https://`` as it serves."""
    return f"{server.scheme}://{server.host}:{server.port}"


def client(server: ServerProcess, key: str = KEY, secret: str = SECRET, ca: Path | None = None):
    """A boto3 S3 client of the user ``key`` on ``server`` (path-style, SigV4, no retries; over HTTPS it trusts the
    certificate file ``ca``)."""
    return boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint(server),
                        aws_access_key_id=key, aws_secret_access_key=secret, verify=str(ca) if ca else None,
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"max_attempts": 1}))


@pytest.fixture(scope="module")
def s3(server: ServerProcess):
    return client(server)


@pytest.fixture(scope="module")
def s3_alt(server: ServerProcess):
    """The other user's client."""
    return client(server, ALT_KEY, ALT_SECRET)


def error_code(err: pytest.ExceptionInfo) -> str:
    return err.value.response["Error"]["Code"]


def aws(server: ServerProcess, credentials: Path, *args: str, ca: Path | None = None) -> subprocess.CompletedProcess:
    """The aws CLI as user KEY on ``server`` (over HTTPS trusting the certificate file ``ca``)."""
    env = {**os.environ, "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_PROFILE": "test",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null",
           **({"AWS_CA_BUNDLE": str(ca)} if ca else {})}
    return subprocess.run([AWS, "--endpoint-url", endpoint(server), *args], env=env,
                          capture_output=True, text=True, timeout=300, check=True)


RCLONE = shutil.which("rclone")


def client_tree(root: Path) -> dict[str, bytes]:
    """A small tree written under ``root`` (a file above rclone's 5 MiB multipart cutoff, a name with a space, an
    empty file): its files' contents by relative path."""
    files = {"a.txt": b"alpha\n", "sub/b.bin": os.urandom(300_000), "sub/deeper/c.bin": os.urandom(12 * 1024 * 1024),
             "space name.txt": b"spaces", "empty.txt": b""}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def rclone(server, *args: str, ca: Path | None = None) -> subprocess.CompletedProcess:
    """rclone with the remote ``cas:`` on ``server`` as user KEY (over HTTPS trusting the certificate file ``ca``,
    by ``--ca-cert``)."""
    # Without AWS_CA_BUNDLE: rclone's s3 backend refuses one with its own transport (LoadCustomCABundleError).
    env = {**{k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"},
           "RCLONE_CONFIG_CAS_TYPE": "s3", "RCLONE_CONFIG_CAS_PROVIDER": "Other",
           "RCLONE_CONFIG_CAS_ACCESS_KEY_ID": KEY, "RCLONE_CONFIG_CAS_SECRET_ACCESS_KEY": SECRET,
           "RCLONE_CONFIG_CAS_ENDPOINT": endpoint(server), "RCLONE_CONFIG_CAS_REGION": "us-east-1",
           "RCLONE_CONFIG": "/dev/null"}
    return subprocess.run([RCLONE, "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M",
                           *(["--ca-cert", str(ca)] if ca else []), *args], env=env,
                          capture_output=True, text=True, timeout=300)


SPARK_JOB = '''
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
df = spark.range(5000).selectExpr("id", "id * 2 AS twice", "cast(id AS string) AS name", "rand(7) AS noise")
df.write.mode("overwrite").parquet(sys.argv[1])
back = spark.read.parquet(sys.argv[1])
same = sorted(map(tuple, back.collect())) == sorted(map(tuple, df.collect()))
print("ROUNDTRIP", "equal" if same else "different", back.count())
'''
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.3.4"  # pyspark 3.5's Hadoop; it brings aws-java-sdk-bundle 1.12.262


def spark_s3a_roundtrip(tmp_path: Path, url: str, conf: dict[str, str]) -> tuple[int, str]:
    """A Spark application writing a DataFrame as Parquet to the ``s3a://`` ``url`` as user KEY, then reading it
    back and printing ``ROUNDTRIP equal 5000`` when it is the same; ``conf`` adds the endpoint and addressing.
    The exit status and output of ``spark-submit``."""
    job = tmp_path / "s3a_roundtrip.py"
    job.write_text(SPARK_JOB)
    conf = {"spark.jars.packages": HADOOP_AWS, "spark.jars.ivy": str(Path.home() / ".cache" / "casstor" / "ivy"),
            "spark.hadoop.fs.s3a.access.key": KEY, "spark.hadoop.fs.s3a.secret.key": SECRET,
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false", "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
            "spark.hadoop.fs.s3a.attempts.maximum": "1", **conf}
    return spark_submit(*[arg for name, value in conf.items() for arg in ("--conf", f"{name}={value}")],
                        str(job), url, timeout=1200)
