"""One Cassandra node of three (RF 3) killed with -9 during each Spark job; nothing is lost.

One 3-node cluster for the module (768 MiB heaps, started one at a time);
every job runs through ``spark-submit`` as a user runs it, in the
background, and a node is SIGKILLed (its pid from the launcher's pid file)
once the job visibly works: files committed, files restored, the online
reclaim's wait announced, a verify stage running. Each job must then
complete correctly, or fail with one ``casstor:`` line and complete when run
again; after the node is started again, every file restores byte-exact and
``jobs/verify.py`` is clean.

Marked ``cluster``: ``make test-all`` runs it (measured 85 minutes for the four with 5 other suites beside it,
load average 30-40; each test may take 40 minutes, hence its timeout).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from casstor_ops.cluster.connection import connect, endpoint_from_env
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.lab.corpus import tree_files, write_versioned_tree
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.schema import init_store

from .faults import BackgroundJob, assert_one_line_failure, kill_node_during, sha256, submit, three_node_env
from .support import past_the_grace

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(2400)]  # a Spark job or two per test, 3 nodes, 2 cores

PREFIX = "tree/"
ONLINE_WAIT_BOUND_S = 15  # the online reclaim waits this + its margin: long enough to kill a node meanwhile


class Fixture:
    """The store on the three nodes, the source tree, and what each committed ID must restore to."""

    def __init__(self, cluster: LocalCluster, source: Path, work: Path) -> None:
        self.cluster = cluster
        self.source = source
        self.work = work
        self.session = connect(endpoint_from_env())
        init_store(self.session)
        self.store = Store(self.session)
        self.expected = {PREFIX + p.relative_to(source).as_posix(): p
                         for version in sorted(source.iterdir()) for p in tree_files(version)}
        self.jobs: list[BackgroundJob] = []

    def job(self, *args: str) -> BackgroundJob:
        self.jobs.append(submit(*args, log=self.work / f"job-{len(self.jobs) + 1}.log"))
        return self.jobs[-1]

    def close(self) -> None:
        """Kill any job a failed test left running (by its own process group), then drop the session."""
        for job in self.jobs:
            job.kill()
        self.session.cluster.shutdown()

    def ensure_stored(self) -> None:
        """Store (in this process) whatever the ingest test did not: each test also runs alone."""
        committed = {info.id for info in self.store.list(PREFIX)}
        for file_id, path in self.expected.items():
            if file_id not in committed:
                self.store.put(path, file_id)

    def committed(self) -> int:
        return sum(1 for _ in self.store.list(PREFIX))

    def node_back_and_everything_intact(self, index: int) -> None:
        """Start node ``index`` again; every expected file restores byte-exact; verify is clean."""
        self.cluster.start_node(index, log=lambda _: None)
        assert {info.id for info in self.store.list(PREFIX)} == set(self.expected)
        for file_id, path in self.expected.items():
            out = self.work / "check.out"
            out.unlink(missing_ok=True)
            self.store.restore(file_id, out)
            assert sha256(out) == sha256(path), file_id
        code, output = self.job("jobs/verify.py").wait()
        assert code == 0 and "no problems" in output, output[-5000:]


@pytest.fixture(scope="module")
def fx(three_nodes: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    with three_node_env(three_nodes):
        work = tmp_path_factory.mktemp("node-kill")
        source = work / "src"
        write_versioned_tree(source, versions=4, files=5, file_bytes=4 << 20, seed=14)
        fixture = Fixture(three_nodes, source, work)
        assert fixture.session.cluster.metadata.keyspaces[DATA_KS].replication_strategy.replication_factor == 3
        try:
            yield fixture
        finally:
            fixture.close()


def _completed(job: BackgroundJob, rerun: tuple[str, ...], fx: Fixture) -> str:
    """The job's output if it exited 0; else it must have failed in one line, and its re-run must exit 0."""
    code, output = job.wait()
    if code != 0:
        print(f"first run failed as allowed: {assert_one_line_failure(code, output)}")
        code, output = fx.job(*rerun).wait()
        assert code == 0, output[-5000:]
    return output


def test_node_killed_during_spark_ingest(fx: Fixture) -> None:
    """Injects: SIGKILL of node 2 once the Spark ingest has committed some files but not all.
    Checks: the ingest completes (or fails in one line and a re-run completes); every file is committed;
    after node 2 returns, every file restores byte-exact and verify is clean."""
    total = len(fx.expected)
    args = ("jobs/ingest.py", str(fx.source), "--prefix", PREFIX, "--parallelism", str(total))
    job = fx.job(*args)
    kill_node_during(fx.cluster, 2, job, lambda: 0 < fx.committed() < total)
    _completed(job, args, fx)
    fx.node_back_and_everything_intact(2)


def test_node_killed_during_spark_restore(fx: Fixture) -> None:
    """Injects: SIGKILL of node 3 once the Spark restore has written into DEST (a restored file or a temporary
    one) but not every file. Checks: the restore completes (or fails in one line and a re-run with --force
    completes) and DEST holds every file byte-exact and nothing else; after node 3 returns, all is intact."""
    fx.ensure_stored()
    dest = fx.work / "restored"
    args = ("jobs/restore.py", PREFIX, str(dest), "--parallelism", str(len(fx.expected)))
    job = fx.job(*args)
    written = lambda: [p for p in dest.rglob("*") if p.is_file()] if dest.exists() else []  # noqa: E731
    kill_node_during(fx.cluster, 3, job, lambda: 0 < len(written()) < len(fx.expected))
    _completed(job, (*args, "--force"), fx)
    restored = {PREFIX + p.relative_to(dest / PREFIX.rstrip("/")).as_posix(): sha256(p) for p in written()}
    assert restored == {file_id: sha256(path) for file_id, path in fx.expected.items()}
    fx.node_back_and_everything_intact(3)


def test_node_killed_during_online_reclaim(fx: Fixture) -> None:
    """Injects: SIGKILL of node 1 (the seed) while `jobs/reclaim.py --online` waits out the commit bound (set to
    15 s), after it deleted the garbage's index rows and before it deletes content. Checks: the reclaim completes
    (or fails in one line and a re-run completes) having deleted blocks; the files left restore byte-exact;
    after node 1 returns verify is clean (no block a file needs was deleted, no index row vouches for nothing)."""
    fx.ensure_stored()
    for file_id in [i for i in fx.expected if i.startswith(PREFIX + "v000/")]:
        fx.store.remove(file_id)
        del fx.expected[file_id]
    # A removed file's versions are kept until forget's grace (twice the commit bound) has passed, and the online
    # reclaim's own forget would judge that grace by the 15 s bound set below: forget them past a 1 s bound first,
    # so that their blocks are garbage for the reclaim to delete.
    past_the_grace(fx.session)
    assert fx.store.forget(PREFIX + "v000/").dropped
    set_commit_bound(fx.session, ONLINE_WAIT_BOUND_S)
    try:
        args = ("jobs/reclaim.py", "--online")
        job = fx.job(*args)
        kill_node_during(fx.cluster, 1, job, lambda: "(commit bound + margin)" in job.output())
        output = _completed(job, args, fx)
    finally:
        set_commit_bound(fx.session, SAFETY.commit_bound_s)
    deleted = re.findall(r"^\s*deleted\s+(\d+)", output, re.MULTILINE)
    assert deleted and int(deleted[-1]) > 0, output[-5000:]
    fx.node_back_and_everything_intact(1)


def test_node_killed_during_verify(fx: Fixture) -> None:
    """Injects: SIGKILL of node 2 once `jobs/verify.py` runs a Spark stage (its console progress bar shows).
    Checks: verify completes clean (or fails in one line); after node 2 returns, a verify is clean and every
    file restores byte-exact (the verify there is the re-run)."""
    fx.ensure_stored()
    job = fx.job("jobs/verify.py")
    kill_node_during(fx.cluster, 2, job, lambda: "[Stage " in job.output())
    code, output = job.wait()
    if code == 0:
        assert "no problems" in output, output[-5000:]
    else:
        print(f"verify with a node killed failed as allowed: {assert_one_line_failure(code, output)}")
    fx.node_back_and_everything_intact(2)
