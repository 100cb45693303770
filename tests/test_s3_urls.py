"""Ingest from ``s3://`` and restore to ``s3://`` on a real S3 server: S3Proxy 2.6.0 on its filesystem backend.

The server is a separate Java 17 process started by the module's fixture
(its jars fetched from Maven Central into the cache on first use), with a
fixed access key, on a free loopback port; the fixture stops it by its pid.
The jobs run through ``spark-submit`` (``local[2]``) with the S3 settings a
user would give: credentials in ``AWS_*`` variables, the endpoint once as
``FSSPEC_S3_ENDPOINT_URL`` (ingest) and once as ``--storage-option`` (restore).

Marked ``slow`` (``make test-all``): the server's start and two Spark
applications take 1-3 minutes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from casstor_ops.cluster.install import install_s3proxy
from casstor_ops.cluster.jvm import find_java17
from casstor_ops.lab.corpus import tree_files, write_versioned_tree
from casstor_ops.errors import CasstorError
from casstor_ops.store.trees.locations import make_directory, replacing_writer, resolve

from .support import running, spark_submit, stop_process

pytestmark = pytest.mark.slow

BUCKET = "casstor-test"
START_TIMEOUT_S = 180.0
# botocore >= 1.36 adds CRC32 checksum headers to every upload by default; S3Proxy 2.6.0 (like other
# S3-compatible servers of its age) refuses them: "Unknown header x-amz-checksum-crc32".
OLDER_SERVER_ENV = {"AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
                    "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required"}


class S3Proxy:
    """One S3Proxy process serving ``root/data`` (each top-level directory a bucket) on ``127.0.0.1:port``."""

    identity, credential = "casstor", "casstor-secret"

    def __init__(self, root: Path) -> None:
        self.root = root
        with socket.socket() as probe:  # a free port now; the server binds it a moment later
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.identity, "AWS_SECRET_ACCESS_KEY": self.credential, **OLDER_SERVER_ENV}

    def start(self) -> None:
        (self.root / "data" / BUCKET).mkdir(parents=True)
        (self.root / "s3proxy.conf").write_text(
            f"s3proxy.endpoint={self.endpoint}\ns3proxy.authorization=aws-v2-or-v4\n"
            f"s3proxy.identity={self.identity}\ns3proxy.credential={self.credential}\n"
            f"jclouds.provider=filesystem\njclouds.filesystem.basedir={self.root / 'data'}\n")
        (self.root / "logback.xml").write_text(
            '<configuration><appender name="OUT" class="ch.qos.logback.core.ConsoleAppender"><encoder>'
            "<pattern>%d{HH:mm:ss} %-5level %logger{20} - %msg%n</pattern></encoder></appender>"
            '<root level="WARN"><appender-ref ref="OUT"/></root></configuration>')
        with open(self.root / "s3proxy.log", "wb") as log:
            self.process = subprocess.Popen(
                [str(find_java17()), f"-Dlogback.configurationFile={self.root / 'logback.xml'}",
                 "-cp", f"{install_s3proxy()}/*", "org.gaul.s3proxy.Main", "--properties",
                 str(self.root / "s3proxy.conf")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"S3Proxy did not start: {(self.root / 's3proxy.log').read_text()[-2000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> S3Proxy:
    with running(S3Proxy(tmp_path_factory.mktemp("s3proxy"))) as server:
        yield server


@pytest.fixture()
def s3_env(s3: S3Proxy, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The S3 settings in this process's environment (the in-process client) and for the jobs."""
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    return s3.env


def test_ingest_from_s3_and_restore_to_s3_byte_exact(cql, s3: S3Proxy, s3_env: dict[str, str],
                                                      tmp_path: Path) -> None:
    source = tmp_path / "src"
    write_versioned_tree(source, versions=2, files=3, file_bytes=300_000, seed=31)
    files = tree_files(source)
    fs, _ = resolve(f"s3://{BUCKET}", {"endpoint_url": s3.endpoint})
    for path in files:
        fs.pipe_file(f"{BUCKET}/tree/{path.relative_to(source).as_posix()}", path.read_bytes())

    report = tmp_path / "ingest.json"
    code, output = spark_submit("jobs/ingest.py", f"s3://{BUCKET}/tree/", "--prefix", "s3/", "--report", str(report),
                                env={**s3_env, "FSSPEC_S3_ENDPOINT_URL": s3.endpoint})
    assert code == 0, output
    rows = json.loads(report.read_text())["files"]
    assert {row["status"] for row in rows} == {"stored"}, rows
    assert sorted(row["id"] for row in rows) == sorted(f"s3/{p.relative_to(source).as_posix()}" for p in files)

    code, output = spark_submit("jobs/restore.py", "s3/", f"s3://{BUCKET}/out/", "--storage-option",
                                f"endpoint_url={s3.endpoint}", env=s3_env)
    assert code == 0, output
    fs.invalidate_cache()
    for path in files:
        assert fs.cat_file(f"{BUCKET}/out/s3/{path.relative_to(source).as_posix()}") == path.read_bytes(), path
    assert not [name for name in fs.find(f"{BUCKET}/out") if ".casstor-" in name]


def test_an_upload_that_fails_leaves_no_object(s3: S3Proxy, s3_env: dict[str, str]) -> None:
    """Injects an error after 20 MiB were written (one 16 MiB part already uploaded); checks that no object
    appears under the name, i.e. the multi-part upload was aborted rather than completed."""
    fs, path = resolve(f"s3://{BUCKET}/failed/f.bin", {"endpoint_url": s3.endpoint})
    with pytest.raises(RuntimeError, match="injected"):
        with replacing_writer(fs, path) as out:
            out.write(b"x" * (20 << 20))
            raise RuntimeError("injected")
    fs.invalidate_cache()
    assert not fs.exists(path)
    with replacing_writer(fs, path) as out:
        out.write(b"whole")
    fs.invalidate_cache()
    assert fs.cat_file(path) == b"whole"


def test_a_restore_to_a_bucket_that_does_not_exist_is_refused_and_creates_none(s3: S3Proxy,
                                                                              s3_env: dict[str, str]) -> None:
    """Injects: a restore destination in a mistyped bucket (s3fs's makedirs would create it). Checks: one
    CasstorError naming the bucket, no bucket made on the server; a destination in the existing bucket passes."""
    typo = resolve(f"s3://{BUCKET}-typo/out/", {"endpoint_url": s3.endpoint})
    with pytest.raises(CasstorError, match=rf"no bucket '{BUCKET}-typo'"):
        make_directory(typo)
    assert not (s3.root / "data" / f"{BUCKET}-typo").exists()
    typo.fs.invalidate_cache()
    assert typo.fs.ls("", detail=False) == [BUCKET]  # the server's buckets (its exists() says yes to any name)
    make_directory(resolve(f"s3://{BUCKET}/out/", {"endpoint_url": s3.endpoint}))
