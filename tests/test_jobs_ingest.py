"""``spark-submit jobs/ingest.py`` and ``jobs/restore.py`` end to end, as a user runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from casstor_ops.errors import EXIT_PARTIAL

from .support import spark_submit

def test_ingest_then_restore_jobs(empty_store, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    files = {"a.bin": os.urandom(300_000), "sub/b.txt": b"hello\n", "sub/empty": b""}
    for rel, data in files.items():
        (src / rel).write_bytes(data)
    report = tmp_path / "report.json"

    code, output = spark_submit("jobs/ingest.py", str(src / "a.bin"), str(src / "sub" / "b.txt"),
                                str(src / "sub" / "empty"), str(src / "gone.bin"), "--prefix", "job/",
                                "--report", str(report))
    assert code == EXIT_PARTIAL, output
    assert "Traceback" not in output
    assert "casstor: job/gone.bin: no such file" in output
    assert "ingest: 4 files" in output and "3 stored, 0 skipped, 1 failed" in output
    assert "MB/s, ETA" in output  # progress lines
    data = json.loads(report.read_text())
    assert data["summary"]["failed"] == 1 and data["summary"]["stored"] == 3
    assert {f["id"]: f["status"] for f in data["files"]}["job/a.bin"] == "stored"

    dest = tmp_path / "dest"
    code, output = spark_submit("jobs/restore.py", "job/", str(dest))
    assert code == 0, output
    for rel, data in files.items():
        assert (dest / "job" / rel).read_bytes() == data


def test_bad_source_is_one_line_error(cql, tmp_path: Path) -> None:
    code, output = spark_submit("jobs/ingest.py", str(tmp_path / "does-not-exist"))
    assert code == 1, output
    assert "Traceback" not in output
    casstor_lines = [line for line in output.splitlines() if line.startswith("casstor:")]
    assert casstor_lines == [f"casstor: {str(tmp_path / 'does-not-exist')!r}: no such file or directory"], output
