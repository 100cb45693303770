"""``casstor verify``, ``casstor reclaim`` and ``casstor report`` as a user runs them: subprocesses, each with its
own local Spark, on the session's node; the same exit statuses as ``spark-submit jobs/*.py``."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from casstor_ops.errors import EXIT_CORRUPT, EXIT_USAGE
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.keyspaces import DATA_KS

from .support import NO_UI, flip_block, put, restored, run_casstor



def casstor_job(*args: str) -> tuple[int, str, str]:
    """Run a maintenance command (it starts its own JVM); exit status, stdout, stderr."""
    run = run_casstor(*args, env=NO_UI, timeout=900)
    return run.returncode, run.stdout.decode(), run.stderr.decode()


def index_rows(cql) -> set[bytes]:
    return {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")}


def test_verify_is_clean_then_exit_3_on_a_damaged_block(empty_store, tmp_path: Path) -> None:
    """Injects: one flipped bit in a stored block. Checks: `casstor verify --json F` exits 0 with the JSON written
    before, and 3 with the block counted as corrupt after."""
    store = Store(empty_store)
    put(store, "v/f", random.Random(1).randbytes(300_000))
    code, out, err = casstor_job("verify", "--json", str(tmp_path / "verify.json"))
    assert code == 0, err[-2000:]
    assert "no problems" in out and json.loads((tmp_path / "verify.json").read_text())["problems"]["corrupt_blocks"] == 0

    flip_block(empty_store, next(iter(index_rows(empty_store))))
    code, out, err = casstor_job("verify")
    assert code == EXIT_CORRUPT, err[-2000:]
    assert "corrupt" in out and "Traceback" not in err


def test_reclaim_dry_run_deletes_nothing_then_reclaim_deletes_the_garbage(empty_store) -> None:
    """Checks: `casstor reclaim --dry-run` prints what forget would drop and the plan, and leaves every index
    row; `casstor reclaim` then forgets the overwritten version (no policy: the newest is kept, once the grace of
    2 x the commit bound has passed) and deletes exactly its blocks, and the file still restores."""
    store = Store(empty_store)
    put(store, "r/a", random.Random(2).randbytes(300_000))
    old = index_rows(empty_store)
    data = random.Random(3).randbytes(200_000)
    put(store, "r/a", data)
    before = index_rows(empty_store)
    set_commit_bound(empty_store, 1)
    time.sleep(2.5)
    try:
        code, out, err = casstor_job("reclaim", "--dry-run")
        assert code == 0, err[-2000:]
        assert "would drop 1 " in out and f"would free {len(old)} blocks" in out
        assert "dry run: nothing deleted" in out and index_rows(empty_store) == before

        code, out, err = casstor_job("reclaim")
        assert code == 0, err[-2000:]
        assert "reclaim done" in out and index_rows(empty_store) == before - old
        assert restored(store, "r/a") == data
    finally:
        set_commit_bound(empty_store, SAFETY.commit_bound_s)


def test_report_writes_the_report_files(empty_store, tmp_path: Path) -> None:
    """Checks: `casstor report --out DIR --depth 2` prints the summary and writes the JSON, CSV, PNG and HTML."""
    store = Store(empty_store)
    shared = random.Random(4).randbytes(300_000)
    put(store, "p/q/one", shared)
    put(store, "p/q/two", shared)
    code, out, err = casstor_job("report", "--out", str(tmp_path / "plots"), "--depth", "2")
    assert code == 0, err[-2000:]
    assert "casstor dedup report" in out and "prefixes (depth 2)" in out
    report = json.loads((tmp_path / "plots" / "dedup_stats.json").read_text())
    assert report["totals"]["files"] == 2 and [row["prefix"] for row in report["prefixes"]] == ["p/q"]
    assert (tmp_path / "plots" / "dedup_report.html").stat().st_size > 0
    assert list((tmp_path / "plots").glob("*.csv")) and list((tmp_path / "plots").glob("*.png"))


def test_a_bad_flag_is_one_line_and_exit_2() -> None:
    """Checks: an unknown flag and a bad value are each one line on stderr and exit 2, before Spark starts."""
    for args in (("verify", "--bogus"), ("report", "--top", "0")):
        run = run_casstor(*args)
        lines = run.stderr.decode().splitlines()
        assert run.returncode == EXIT_USAGE and len(lines) == 1, lines
        assert lines[0].startswith("casstor") and "error:" in lines[0]
