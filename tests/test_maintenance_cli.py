"""``casstor verify`` and ``casstor reclaim`` as a user runs them: subprocesses, each with its own local Spark, on
the session's node; the same exit statuses as ``spark-submit jobs/*.py``. ``casstor report`` runs so in
``tests/test_dedup_stats.py``.

Each command runs once as a subprocess: a cold Spark JVM costs ~25-30 s here. A second run of a command (the
dry run) goes through the same parser and job body in this process, on the session's SparkSession."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from casstor_ops.cli.cmd_maintenance import RECLAIM
from casstor_ops.cli.main import build_parser
from casstor_ops.errors import EXIT_CORRUPT, EXIT_USAGE
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS

from .support import casstor_job, flip_block, put, restored, run_casstor



def index_rows(cql) -> set[bytes]:
    return {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")}


def test_verify_exits_3_on_a_damaged_block_and_writes_the_json(empty_store, tmp_path: Path) -> None:
    """Injects: one flipped bit in a stored block. Checks: `casstor verify --json F` exits 3, prints the block as
    corrupt, and writes the JSON report with it counted (a clean store's exit 0: tests/test_verify.py)."""
    store = Store(empty_store)
    put(store, "v/f", random.Random(1).randbytes(300_000))
    flip_block(empty_store, next(iter(index_rows(empty_store))))
    code, out, err = casstor_job("verify", "--json", str(tmp_path / "verify.json"))
    assert code == EXIT_CORRUPT, err[-2000:]
    assert "corrupt" in out and "Traceback" not in err
    report = json.loads((tmp_path / "verify.json").read_text())
    assert report["problems"]["corrupt_blocks"] == 1 and report["exit_code"] == EXIT_CORRUPT


def test_reclaim_dry_run_deletes_nothing_then_reclaim_deletes_the_garbage(empty_store, spark, capsys) -> None:
    """Checks: `reclaim --dry-run` (in this process) prints what forget would drop and the plan, and leaves every
    index row; `casstor reclaim` then forgets the overwritten version (no policy: the newest is kept, once the grace
    of 2 x the commit bound has passed) and deletes exactly its blocks, and the file still restores."""
    store = Store(empty_store)
    put(store, "r/a", random.Random(2).randbytes(300_000))
    old = index_rows(empty_store)
    data = random.Random(3).randbytes(200_000)
    put(store, "r/a", data)
    before = index_rows(empty_store)
    set_commit_bound(empty_store, 1)
    time.sleep(2.5)
    try:
        assert RECLAIM.main(build_parser().parse_args(["reclaim", "--dry-run"]), spark) == 0
        out = capsys.readouterr().out
        assert "would drop 1 " in out and f"would free {len(old)} blocks" in out
        assert "dry run: nothing deleted" in out and index_rows(empty_store) == before

        code, out, err = casstor_job("reclaim")
        assert code == 0, err[-2000:]
        assert "reclaim done" in out and index_rows(empty_store) == before - old
        assert restored(store, "r/a") == data
    finally:
        set_commit_bound(empty_store, SAFETY.commit_bound_s)


def test_a_bad_flag_is_one_line_and_exit_2() -> None:
    """Checks: an unknown flag and a bad value are each one line on stderr and exit 2, before Spark starts."""
    for args in (("verify", "--bogus"), ("report", "--top", "0")):
        run = run_casstor(*args)
        lines = run.stderr.decode().splitlines()
        assert run.returncode == EXIT_USAGE and len(lines) == 1, lines
        assert lines[0].startswith("casstor") and "error:" in lines[0]
