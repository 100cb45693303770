"""``casstor demo``: the main job on the embedded local node (``make demo``).

Starts the local node, initialises the store, generates a sample tree
(several versions of a set of files with small edits, inserts and deletes),
bulk-ingests it through Spark executors, prints the dedup report (written
with its plots to ``plots/``), then restores a few files and verifies them
byte for byte against the sample. Running it again resumes: the sample is
reused and the ingest skips every file already committed. Last, history:
one sample file stored under ``demo-history/`` and overwritten with an edit,
its versions listed (``casstor ls --versions``), and the first restored as it
was at a time between the two stores (``casstor restore --at``), compared.
"""

from __future__ import annotations

import argparse
import io
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from casstor_ops.cli.cmd_files import version_line
from casstor_ops.cluster import paths as layout
from casstor_ops.cluster.connection import connect
from casstor_ops.errors import CasstorError
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.store.schema import init_store
from casstor_ops.store.api import Store

SAMPLE_PREFIX = "demo/"
HISTORY_ID = "demo-history/file.bin"


def _sample_tree(versions: int, file_mib: int) -> Path:
    root = layout.home_dir() / f"demo-sample-{versions}x{file_mib}"
    marker = root.with_name(root.name + ".complete")  # beside the tree, so it is not ingested
    if not marker.exists():
        from casstor_ops.lab.corpus import write_versioned_tree  # NumPy: not for the commands that only register this one

        print(f"demo: generating a sample tree under {root} ({versions} versions of 4 files of {file_mib} MiB)")
        write_versioned_tree(root, versions=versions, files=4, file_bytes=file_mib << 20, seed=7)
        marker.touch()
    return root


def _verify_some(store: Store, sample: Path, count: int) -> None:
    from casstor_ops.lab.corpus import tree_files

    files = tree_files(sample)
    picks = files[:: max(1, len(files) // count)][:count]
    with tempfile.TemporaryDirectory() as tmp:
        for path in picks:
            file_id = SAMPLE_PREFIX + path.relative_to(sample).as_posix()
            out = Path(tmp) / "restored"
            store.restore(file_id, out, force=True)
            if out.read_bytes() != path.read_bytes():
                raise CasstorError(f"demo: {file_id} restored with different content")
            print(f"demo: restored {file_id} ({path.stat().st_size:,} bytes): byte-exact, hash verified")


def _history(store: Store, sample: Path) -> None:
    """Store a file, overwrite it with an edit, list its versions, restore the first as of a time between."""
    from casstor_ops.lab.corpus import tree_files

    first = tree_files(sample)[0].read_bytes()
    second = first[: len(first) // 2] + b"an edit in the middle" + first[len(first) // 2:]
    store.put(io.BytesIO(first), HISTORY_ID)
    between = datetime.now(timezone.utc)
    edit = store.put(io.BytesIO(second), HISTORY_ID)
    print(f"demo: history: {HISTORY_ID} stored, then overwritten with an edit ({edit.new_blocks} new blocks); "
          f"casstor ls --versions {HISTORY_ID}:")
    for found in store.versions(HISTORY_ID)[:4]:
        print(f"  {version_line(found)}")
    out = io.BytesIO()
    store.restore(HISTORY_ID, out, head=store.stat(HISTORY_ID, at=between))
    if out.getvalue() != first:
        raise CasstorError(f"demo: {HISTORY_ID} at {between.isoformat()} is not the first version")
    print(f"demo: casstor restore {HISTORY_ID} - --at {between.isoformat()}: the first version, byte-exact")


def _demo(args: argparse.Namespace) -> int:
    # Spark modules load pyspark: imported here so other commands start fast.
    from casstor_ops.spark.bulk_report import finish
    from casstor_ops.ops.dedup_output import format_table, render
    from casstor_ops.ops.dedup_stats import compute
    from casstor_ops.spark.job_progress import print_progress
    from casstor_ops.spark.bulk_ingest import ingest
    from casstor_ops.spark.session import spark_session

    cluster = LocalCluster()
    cluster.start()
    session = connect()
    try:
        init_store(session)
        store = Store(session)
        sample = _sample_tree(args.versions, args.file_mib)
        spark = spark_session("casstor-demo", master="local[2]", conf={"spark.ui.enabled": "false"})
        try:
            code = finish(ingest(spark, str(sample), prefix=SAMPLE_PREFIX, progress=print_progress("ingest")),
                          "demo ingest")
            report = compute(spark)
            print(format_table(report))
            written = render(report, layout.project_root() / "plots")
            print(f"demo: dedup report written to {', '.join(p.name for p in written)} in plots/")
        finally:
            spark.stop()
        _verify_some(store, sample, args.verify)
        _history(store, sample)
    finally:
        session.cluster.shutdown()
    print(cluster.nodetool("status").rstrip())
    print("demo: the node keeps running; stop it with '.venv/bin/casstor cluster stop'")
    return code


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the main job: local node, init, Spark bulk ingest, dedup report, verify")
    p.add_argument("--versions", type=int, default=5, help="versions of the sample tree (default 5)")
    p.add_argument("--file-mib", type=int, default=8, help="size of each sample file in MiB (default 8)")
    p.add_argument("--verify", type=int, default=4, help="files to restore and verify (default 4)")
    p.set_defaults(func=_demo)
