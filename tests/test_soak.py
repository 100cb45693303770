"""Soak: writers store, overwrite and remove files with shared blocks while online reclaim and verify run again and
again; at the end nothing committed is lost and the garbage left is only what the last reclaim could not free.

Writers: :data:`WRITERS` processes of :mod:`tests.soak_writer` (the Store API, each in its own process, each
with a ledger; one of them stores its files in batches, ``Store.put_many``). Maintenance: the test process alternates ``reclaim(online=True)`` and ``verify`` (the library
calls behind ``jobs/reclaim.py --online`` and ``jobs/verify.py``) on the session's local[2] SparkSession until the
writers stop: a ``spark-submit`` per run would spend most of the one-minute soak starting Spark (the jobs
themselves run through ``spark-submit`` in ``tests/test_faults_node_kill.py``). The commit bound is 1 s, so
each online reclaim waits ~6 s.

At the end, checked:

* no writer operation failed, and every verify during the soak found no problem;
* the committed files are exactly the ledgers' last states, and each restores byte-exact (SHA-256);
* a final verify is clean;
* the garbage left (index rows no head's block list names) is only what the last reclaim could not yet prove
  unreferenced: each such block was written after that reclaim's cut-off (its plan time: its index row's write
  time is later, which includes an index row a rescue rewrote), or was named by a version whose overwrite or
  removal had not returned at the cut-off (it may still have been a head when the plan read the heads), or was
  sent less than ``IN_FLIGHT_S`` before the cut-off (it may have been applied after the plan's scan);
* then, the writers gone, a final offline reclaim leaves no garbage at all (by the same rule, nothing was
  written or dereferenced after its cut-off), so a reclaim that frees less than it should fails even when the
  machine is so slow that the soak's last reclaim planned before most garbage existed.

The figures (operations by kind, reclaims, bytes reclaimed, garbage left, duration) are printed.
Both ``test_soak[1min]`` and ``test_soak[10min]`` are ``slow`` (``make test-all``), as the brief puts every soak:
``make test`` keeps writers beside online reclaims in ``tests/test_reclaim.py::test_online_reclaim_beside_writers``.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from casstor_ops.ops.reclaim import reclaim
from casstor_ops.ops.verify import verify
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS

from .faults import BackgroundJob, sha256
from .soak_writer import BATCH_WRITER
from .support import head_rows

WRITERS = 3
# A write carries the client's clock from when the driver sent it; under load a write sent just before a
# reclaim's cut-off can be applied after that reclaim's plan scanned the index (the scan starts seconds after the
# cut-off, in a Spark job). Such a block is not in the plan and is left for the next reclaim (which the final
# offline one is). A node applies a mutation within its write timeout (2 s) of receiving it or drops it (the
# client then retries it, stamped anew); the rest of the margin is queueing on a loaded 2-core machine.
IN_FLIGHT_S = 10


@dataclass
class Figures:
    ops: Counter = field(default_factory=Counter)
    bytes_stored: int = 0
    reclaims: int = 0
    reclaimed_blocks: int = 0
    reclaimed_bytes: int = 0
    rescued_blocks: int = 0
    verifies: int = 0
    garbage_left: dict = field(default_factory=dict)

    def line(self) -> str:
        return (f"soak: {WRITERS} writers: {sum(self.ops.values())} operations "
                f"({', '.join(f'{n} {op}' for op, n in sorted(self.ops.items()))}), {self.bytes_stored / 1e6:.1f} MB "
                f"stored; {self.reclaims} online reclaims deleted {self.reclaimed_blocks} blocks "
                f"({self.reclaimed_bytes / 1e6:.1f} MB), rescued {self.rescued_blocks}; {self.verifies} verifies "
                f"clean; garbage left {self.garbage_left}")


def _ledger(paths: list[Path]) -> list[dict]:
    return [json.loads(line) for path in paths for line in path.read_text().splitlines()]


def _last_states(entries: list[dict]) -> dict[str, str]:
    """ID -> SHA-256 of the content its writer last committed (removed IDs absent)."""
    state: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: e["end"]):
        if entry["op"] == "remove":
            del state[entry["id"]]
        else:
            state[entry["id"]] = entry["sha256"]
    return state


def _garbage_left(session, entries: list[dict], cutoff: datetime) -> tuple[dict[str, int], list[str]]:
    """Counts of the garbage left by reason, and the blocks no reason explains (hex), given the last cut-off.

    A version dereferenced less than forget's grace (2 x the commit bound) before the reclaim's forget is kept,
    and its blocks with it: dereferenced within ``GRACE_S`` (the grace and the time forget takes before the plan)
    of the cut-off explains a block."""
    heads = {(r.id, r.version) for r in head_rows(session)}
    lists: dict[bytes, list] = {}
    for row in session.execute(f"SELECT id, version, hash FROM {META_KS}.file_blocks"):
        lists.setdefault(row.hash, []).append((row.id, row.version))
    for row in session.execute(f"SELECT id, version, lone_block FROM {META_KS}.versions"):  # a one-block file's list
        if row.lone_block is not None:
            lists.setdefault(row.lone_block, []).append((row.id, row.version))
    referenced = {h for h, versions in lists.items() if any(v in heads for v in versions)}
    dereferenced_at = {e["old"]: e["end"] for e in entries if e["op"] in ("overwrite", "remove")}
    cutoff_us = int(cutoff.timestamp() * 1_000_000)
    counts, unexplained = Counter(), []
    for row in session.execute(f"SELECT hash, size, WRITETIME(size) AS written FROM {DATA_KS}.existing_blocks"):
        if row.hash in referenced:
            continue
        if row.written >= cutoff_us:
            counts["written after the cut-off"] += 1
        elif any(dereferenced_at.get(str(v), 0) > cutoff.timestamp() - GRACE_S for _, v in lists.get(row.hash, [])):
            counts["dereferenced within forget's grace of the cut-off"] += 1
        elif row.written >= cutoff_us - IN_FLIGHT_S * 1_000_000:  # after the rest: only what they miss
            counts[f"sent {(cutoff_us - row.written) / 1e6:.1f} s before the cut-off"] += 1
        else:
            unexplained.append(row.hash.hex())
    return dict(counts), unexplained


BOUND_S = 1  # the soak's commit bound
GRACE_S = 2 * BOUND_S + 3  # forget's grace, and the time its reading of versions may take before the plan


@pytest.fixture()
def soak_store(empty_store) -> Store:
    set_commit_bound(empty_store, BOUND_S)
    yield Store(empty_store)
    set_commit_bound(empty_store, SAFETY.commit_bound_s)


@pytest.mark.parametrize("seconds", [pytest.param(60, id="1min", marks=[pytest.mark.slow, pytest.mark.timeout(1800)]),
                                     pytest.param(600, id="10min", marks=[pytest.mark.slow, pytest.mark.timeout(3600)])])
def test_soak(seconds: int, soak_store: Store, spark, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Injects concurrency, not a fault: writers racing online reclaims and verifies for ``seconds``. Checks the
    module docstring's list: nothing committed is lost, verify stays clean, only unprovable garbage is left."""
    session, figures, started = soak_store.session, Figures(), time.monotonic()
    ledgers = [tmp_path / f"ledger-w{w}.jsonl" for w in range(WRITERS)]
    writers = [BackgroundJob([sys.executable, "-m", "tests.soak_writer", str(w), str(seconds), str(ledgers[w])],
                             tmp_path / f"writer-{w}.log") for w in range(WRITERS)]
    cutoff = None
    try:
        while any(w.running() for w in writers):
            outcome = reclaim(spark, session, online=True, log=lambda _: None)
            cutoff = outcome.plan.planned_at
            figures.reclaims += 1
            figures.reclaimed_blocks += outcome.stats.deleted.blocks
            figures.reclaimed_bytes += outcome.stats.deleted.bytes
            figures.rescued_blocks += outcome.stats.rescued.blocks
            if not any(w.running() for w in writers):
                break  # the final verify below follows at once
            report = verify(spark)
            assert report.exit_code == 0 and not any(report.problems.values()), report.table()
            figures.verifies += 1
    finally:
        for writer in writers:
            writer.kill() if writer.running() else None
    for writer in writers:
        code, output = writer.wait()
        assert code == 0, output[-3000:]
    entries = _ledger(ledgers)
    figures.ops = Counter(e["op"] for e in entries)
    figures.bytes_stored = sum(e["size"] or 0 for e in entries)
    assert figures.ops["failed"] == 0 and figures.ops["overwrite"] and figures.ops["remove"], figures.ops
    assert any(e["id"].startswith(f"soak/w{BATCH_WRITER}/") and e["new"] for e in entries)  # batches committed

    figures.garbage_left, unexplained = _garbage_left(session, entries, cutoff)
    with capsys.disabled():
        print(f"\n{figures.line()}")
    assert unexplained == [], f"garbage the last reclaim should have deleted: {unexplained[:5]}"
    # With the writers gone and forget's grace past, one more reclaim can prove every unreferenced block garbage:
    # none may be left.
    time.sleep(GRACE_S)
    swept = reclaim(spark, session, log=lambda _: None)
    left, unexplained = _garbage_left(session, entries, swept.plan.planned_at)
    with capsys.disabled():
        print(f"soak: a final offline reclaim deleted {swept.stats.deleted.blocks} blocks "
              f"({swept.stats.deleted.bytes / 1e6:.1f} MB); garbage left {left}")
    assert left == {} and unexplained == [], (left, unexplained[:5])

    expected = _last_states(entries)
    assert {info.id for info in soak_store.list("soak/")} == set(expected)
    out = tmp_path / "restored"
    for file_id, digest in expected.items():
        soak_store.restore(file_id, out, force=True)
        assert sha256(out) == digest, file_id
    final = verify(spark)
    assert final.exit_code == 0 and not any(final.problems.values()), final.table()
    with capsys.disabled():
        print(f"soak: all checks passed in {time.monotonic() - started:.0f} s")
