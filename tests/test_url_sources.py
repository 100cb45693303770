"""Ingest from and restore to URLs (``file://`` through fsspec), and a source the executors cannot read.

The ``file://`` tests run the URL code path (listing by fsspec on the
driver, fsspec file objects on the executors, writes committed by a move)
on the local filesystem, in the session's ``local[2]`` Spark; the S3 test
with a real S3 server is ``tests/test_s3_urls.py`` (marked ``slow``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from casstor_ops.errors import EXIT_PARTIAL
from casstor_ops.lab.corpus import tree_files, write_versioned_tree
from casstor_ops.spark.bulk_ingest import ingest
from casstor_ops.spark.bulk_restore import restore_many
from casstor_ops.store.api import Store

from .support import restored, spark_submit, write_tree


def _by_id(results) -> dict[str, str]:
    return {row.id: row.status for row in results.collect()}


def test_a_file_url_ingests_and_restores_like_its_path(spark, empty_store, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (write_versioned_tree(source, versions=2, files=3, file_bytes=200_000, seed=21)[0] / "empty").write_bytes(b"")
    files = tree_files(source)

    by_path = _by_id(ingest(spark, str(source), prefix="plain/"))
    by_url = _by_id(ingest(spark, source.as_uri() + "/", prefix="url/"))
    assert set(by_url.values()) == {"stored"}
    assert {i.removeprefix("url/") for i in by_url} == {i.removeprefix("plain/") for i in by_path}
    assert len(by_url) == len(files)

    again = _by_id(ingest(spark, source.as_uri(), prefix="url/"))
    assert set(again.values()) == {"skipped"}, again

    out = tmp_path / "out"
    restored = restore_many(spark, "url/", out.as_uri()).collect()
    assert {row.status for row in restored} == {"restored"}
    assert {row.path for row in restored} == {(out / row.id).as_uri() for row in restored}
    for path in files:
        assert (out / "url" / path.relative_to(source)).read_bytes() == path.read_bytes(), path
    assert not list(out.rglob(".casstor-*")), "a temporary name was left behind"

    kept = restore_many(spark, "url/", out.as_uri()).collect()
    assert {row.status for row in kept} == {"failed"}
    assert all(row.error.endswith("already exists (use --force to overwrite)") for row in kept), kept


def test_a_source_gone_on_the_executors_is_one_line(empty_store, tmp_path: Path) -> None:
    """Injects: the executors' Python is a wrapper that removes the source directory before it starts, i.e.
    after the driver listed it (as when the source is not mounted on the executors). Checks: exit 4, the summary,
    and one ``casstor:`` line that says the executors did not find the source, instead of one line per file."""
    source = tmp_path / "src"
    write_versioned_tree(source, versions=1, files=3, file_bytes=50_000, seed=22)
    count = len(tree_files(source))
    wrapper = tmp_path / "executor-python"
    wrapper.write_text(f"#!/bin/sh\nrm -rf '{source}'\nexec '{sys.executable}' \"$@\"\n")
    wrapper.chmod(0o755)

    code, output = spark_submit("--conf", f"spark.pyspark.python={wrapper}", "jobs/ingest.py", str(source),
                                "--prefix", "gone/")

    assert code == EXIT_PARTIAL, output
    assert not source.exists(), "the wrapper did not run: the fault was not injected"
    assert f"ingest: {count} files" in output and f"0 stored, 0 skipped, {count} failed" in output, output
    casstor_lines = [line for line in output.splitlines() if line.startswith("casstor:")]
    assert len(casstor_lines) == 1, output
    assert f"none of the {count} listed files exists where the executors look" in casstor_lines[0], output
    assert "Traceback" not in output


def test_an_options_file_configures_the_executors_filesystem(empty_store, tmp_path: Path) -> None:
    """Injects a URL whose filesystem needs an option given only in a 0600 --storage-options-file: ``dir://tree/``
    names a directory of fsspec's dir filesystem, whose root (``path``) is in the file. Checks the ingest through
    spark-submit stores every file byte-exact: the file's values reached fsspec on the driver (the listing) and on
    the executors (the reads)."""
    base = tmp_path / "base"
    files = {"a.bin": os.urandom(60_000), "sub/b.txt": b"b" * 1_000}
    write_tree(base / "tree", files)
    options = tmp_path / "dir.options"
    options.write_text(json.dumps({"path": str(base), "target_protocol": "file"}))
    options.chmod(0o600)

    code, output = spark_submit("jobs/ingest.py", "dir://tree/", "--prefix", "opt/", "--storage-options-file",
                                str(options))

    assert code == 0 and f"{len(files)} stored" in output, output
    store = Store(empty_store)
    assert {name: restored(store, f"opt/{name}") for name in files} == files
