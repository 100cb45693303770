"""Symlinks to files in a tree on the real test node: `casstor store DIR PREFIX` and the Spark ingest never follow
one unless --follow-symlinks, and a file swapped for a link after the listing is refused, not followed.

The stand-in for ``/etc/shadow`` is a file of random bytes in a directory outside the tree; each test checks
that its bytes are nowhere in the store: no ID for it, and the store's totals (``stats``: files, logical and
unique bytes, blocks) are those of the tree's own regular files alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from casstor_ops.cluster.connection import endpoint_from_env
from casstor_ops.spark.bulk_ingest import ingest, ingest_job
from casstor_ops.spark.bulk_report import finish
from casstor_ops.spark.bulk_tasks import run_bulk
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.leases import WriterLease
from casstor_ops.store.trees.source_listing import SYMLINK_NOT_FOLLOWED, list_source
from casstor_ops.store.bulk.tree_files import store_unless_unchanged

from .support import run_casstor, write_tree

PLAIN = os.urandom(150_000)  # the tree's one regular file: random, so its blocks are its bytes once


@pytest.fixture()
def secret(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file another user's link could point at, outside every tree of the test."""
    path = tmp_path_factory.mktemp("elsewhere") / "shadow"
    path.write_bytes(b"root:$6$secret-hash:19000:0:99999:7:::\n" + os.urandom(100_000))
    return path


@pytest.fixture()
def store(empty_store) -> Store:
    return Store(empty_store)


def _linked_tree(root: Path, secret: Path) -> Path:
    write_tree(root, {"plain.bin": PLAIN})
    (root / "shadow").symlink_to(secret)
    return root


def _only_the_plain_file(store: Store, prefix: str) -> None:
    """The store holds the tree's regular file under ``prefix`` and nothing of the secret."""
    assert [info.id for info in store.list()] == [f"{prefix}plain.bin"]
    stats = store.stats()
    assert (stats.files, stats.logical_bytes, stats.unique_bytes) == (1, len(PLAIN), len(PLAIN))
    assert stats.unique_blocks == store.stat(f"{prefix}plain.bin").blocks


def test_tree_store_skips_a_link_to_a_file_outside_the_tree(store: Store, secret: Path, tmp_path: Path) -> None:
    """Injects a symlink in the tree to a file outside it; checks `casstor store DIR PREFIX` reports it skipped
    (its row, one stderr line, exit 0), stores none of its bytes, and stores it only with --follow-symlinks."""
    src = _linked_tree(tmp_path / "src", secret)
    proc = run_casstor("store", str(src), "t/", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {row["id"]: row for row in json.loads(proc.stdout)["files"]}
    assert rows["t/shadow"]["status"] == "skipped" and rows["t/shadow"]["error"] == SYMLINK_NOT_FOLLOWED
    assert rows["t/shadow"]["bytes"] == 0 and rows["t/plain.bin"]["status"] == "stored"
    assert proc.stderr.decode().splitlines() == [f"casstor: skipped: t/shadow: {SYMLINK_NOT_FOLLOWED}"]
    _only_the_plain_file(store, "t/")

    followed = run_casstor("store", str(src), "f/", "--follow-symlinks", "--quiet")
    assert followed.returncode == 0, followed.stderr
    assert store.stat("f/shadow").size == secret.stat().st_size


def test_a_file_swapped_for_a_link_after_listing_is_refused(store: Store, secret: Path, tmp_path: Path) -> None:
    """Injects the race: a file listed as regular, then replaced by a symlink to the secret before it is opened
    (the tree runner's per-file work called on the listed entries); checks that file fails with one line naming
    the link, and none of the secret's bytes are stored."""
    src = tmp_path / "src"
    write_tree(src, {"plain.bin": PLAIN, "swapped": b"harmless"})
    entries = list_source(src, prefix="r/")
    (src / "swapped").unlink()
    (src / "swapped").symlink_to(secret)
    errors = {}
    with WriterLease(store.session, "store") as lease:
        for entry in entries:
            try:
                store_unless_unchanged(store, entry, {}, lease)
            except Exception as err:  # the runner records it as the file's error
                errors[entry.file_id] = str(err)
    assert errors == {"r/swapped": f"cannot store {str(src / 'swapped')!r}: is a symlink, not followed"}
    _only_the_plain_file(store, "r/")


def test_spark_ingest_skips_a_link_and_refuses_one_swapped_in(spark, store: Store, secret: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    """Injects a symlink to the secret in the tree, and a file swapped for such a link between the listing and the
    Spark task; checks the first is a skipped row with its reason and one stderr line (exit 0), the second a failed
    row with one line, and the store holds none of the secret's bytes."""
    src = _linked_tree(tmp_path / "src", secret)
    report = tmp_path / "report.json"
    assert finish(ingest(spark, str(src), prefix="s/"), "ingest", str(report)) == 0
    rows = {row["id"]: row for row in json.loads(report.read_text())["files"]}
    assert rows["s/shadow"]["status"] == "skipped" and rows["s/shadow"]["error"] == SYMLINK_NOT_FOLLOWED
    assert f"casstor: skipped: s/shadow: {SYMLINK_NOT_FOLLOWED}" in capsys.readouterr().err.splitlines()
    _only_the_plain_file(store, "s/")

    write_tree(src, {"swapped": b"harmless"})
    entries = [e for e in list_source(src, prefix="s/") if e.file_id == "s/swapped"]
    (src / "swapped").unlink()
    (src / "swapped").symlink_to(secret)
    swapped = run_bulk(spark, ingest_job(), entries, endpoint_from_env(), parallelism=1).collect()
    assert [(r.status, r.error) for r in swapped] == [
        ("failed", f"cannot store {str(src / 'swapped')!r}: is a symlink, not followed")]
    _only_the_plain_file(store, "s/")
