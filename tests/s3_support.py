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
