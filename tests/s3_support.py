"""The S3 face's test fixtures, shared by every ``tests/test_s3*.py`` (registered in ``tests/conftest.py``).

A 0600 credentials file (two users), one ``casstor serve --s3`` subprocess per module on the test node, a
boto3 client of each user on it (path-style, SigV4, no retries), and the aws CLI that ``make setup`` installs
in a venv of its own (it pins another botocore than s3fs).
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


def client(server: ServerProcess, key: str = KEY, secret: str = SECRET):
    """A boto3 S3 client of the user ``key`` on ``server`` (path-style, SigV4, no retries)."""
    return boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://{server.host}:{server.port}",
                        aws_access_key_id=key, aws_secret_access_key=secret,
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


def aws(server: ServerProcess, credentials: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_PROFILE": "test",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null"}
    return subprocess.run([AWS, "--endpoint-url", f"http://{server.host}:{server.port}", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=True)


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
