"""The jobs on a real Spark standalone cluster (a master and two workers) over three Cassandra nodes, RF 3.

Every job runs through ``spark-submit --master spark://127.0.0.1:<port>``, as
a user would, so the store code runs in executor processes launched by the
workers, not in the driver.

Injected: the workers (hence the executors) start with no ``CASSTOR_*``
variable, so the connection can only reach the executors inside the job; the
store's commit bound is set to 1 s, so online reclaim waits seconds rather
than minutes; one file is removed before reclaim, so it has blocks to free.

Checked: ingest stores every file; restore gives them back byte-exact; the
dedup report computed on the cluster equals the one computed with
``local[2]`` on the same store; verify finds no problem; ``reclaim
--online`` exits 0; the master ran every submitted application. Then: a job
whose executors run a Python without casstor fails with one ``casstor:``
line, no traceback and no Java frames.

Marked ``cluster``: ``make test-all`` runs it (about 5 minutes on a quiet
machine: three nodes start one at a time, then seven Spark applications;
more than 35 minutes measured while other suites loaded the two cores to a
load average of 30-50, hence the time limits below).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import venv
from pathlib import Path

import pytest

from casstor_ops.cluster.connection import connect, endpoint_from_env
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.lab.corpus import tree_files, write_versioned_tree
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.schema import init_store

from .support import (SPARK_MASTER_PORT, SPARK_SUBMIT, SPARK_WEBUI_PORT, THREE_NODE_PORTS, run_casstor, running,
                      spark_submit, stop_process)

pytestmark = pytest.mark.cluster
# Limits for a machine loaded by other suites (load average 30-50 on 2 cores measured, where one dedup_stats
# application on the cluster took more than 10 minutes): a job, and the first test, whose set-up starts the
# three nodes and the Spark daemons (9 minutes measured under that load).
JOB_TIMEOUT_S = 1500
LOADED_MACHINE_TIMEOUT_S = 5400

SPARK_CLASS = SPARK_SUBMIT.parent / "spark-class"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0


class StandaloneSpark:
    """A Spark standalone master and ``workers`` workers, each its own ``spark-class`` process.

    Each process logs to ``root/<name>.log``; each worker has its own work
    directory ``root/worker<i>/``. :meth:`stop` signals exactly the pids
    :meth:`start` recorded (``spark-class`` execs the JVM, so each pid is
    the daemon itself); a worker stopping kills the executors it launched.
    """

    def __init__(self, root: Path, workers: int = 2) -> None:
        self.root = root
        self.workers = workers
        self.url = f"spark://127.0.0.1:{SPARK_MASTER_PORT}"
        self.processes: dict[str, subprocess.Popen] = {}

    def state(self) -> dict:
        """The master's status page as JSON (workers, running and completed applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{SPARK_WEBUI_PORT}/json/", timeout=5) as reply:
            return json.load(reply)

    def start(self) -> None:
        self._launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(SPARK_MASTER_PORT), "--webui-port", str(SPARK_WEBUI_PORT))
        for i in range(1, self.workers + 1):
            work_dir = self.root / f"worker{i}"
            work_dir.mkdir()
            # One core each: the three Cassandra nodes share the machine's cores with them.
            self._launch(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--cores", "1", "--memory", "1g", "--work-dir", str(work_dir),
                         "--webui-port", str(SPARK_WEBUI_PORT + i), self.url)
        self._wait_for_workers()

    def stop(self) -> None:
        # Workers first, so the master does not log them as lost and none re-registers.
        for proc in reversed(list(self.processes.values())):
            stop_process(proc, STOP_TIMEOUT_S)

    def _launch(self, name: str, main_class: str, *args: str) -> None:
        # No CASSTOR_* variable on the workers: the executors must get the store's endpoint from the job.
        env = {k: v for k, v in os.environ.items() if not k.startswith("CASSTOR_")}
        env["PYSPARK_PYTHON"] = sys.executable
        with open(self.root / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(
                [str(SPARK_CLASS), main_class, *args], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, cwd=self.root, start_new_session=True)

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"spark {name} exited ({proc.returncode}): "
                                       f"{(self.root / f'{name}.log').read_text()[-2000:]}")
            try:
                alive = [w for w in self.state()["workers"] if w["state"] == "ALIVE"]
            except OSError:  # the master's web UI is not up yet
                alive = []
            if len(alive) == self.workers:
                return
            time.sleep(1)
        raise RuntimeError(f"{self.workers} workers not registered with {self.url} "
                           f"within {START_TIMEOUT_S:.0f} s")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> StandaloneSpark:
    """A running master and two registered workers; stopped (by pid) even if start-up or a test fails."""
    with running(StandaloneSpark(tmp_path_factory.mktemp("spark-standalone"))) as spark:
        yield spark


def _use_store_on(three_nodes: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the jobs at the three nodes and initialise the store there (RF 3; a commit bound of 1 s)."""
    monkeypatch.setenv("CASSTOR_NODES", ",".join(three_nodes.contact_points))
    monkeypatch.setenv("CASSTOR_PORT", str(THREE_NODE_PORTS.cql))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    session = connect(endpoint_from_env())
    try:
        init_store(session)
        assert session.cluster.metadata.keyspaces[DATA_KS].replication_strategy.replication_factor == 3
        set_commit_bound(session, 1)
    finally:
        session.cluster.shutdown()


def _submit(*args: str, master: str) -> str:
    code, output = spark_submit(*args, master=master, timeout=JOB_TIMEOUT_S)
    assert code == 0, output
    return output


@pytest.mark.timeout(LOADED_MACHINE_TIMEOUT_S)
def test_jobs_on_a_standalone_cluster(three_nodes: LocalCluster, standalone: StandaloneSpark,
                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use_store_on(three_nodes, monkeypatch)
    source = tmp_path / "src"
    write_versioned_tree(source, versions=3, files=3, file_bytes=1 << 20, seed=15)
    files = [p for version in sorted(source.iterdir()) for p in tree_files(version)]
    cluster = standalone.url

    report = tmp_path / "ingest.json"
    _submit("jobs/ingest.py", str(source), "--prefix", "tree/", "--report", str(report), master=cluster)
    assert {row["status"] for row in json.loads(report.read_text())["files"]} == {"stored"}

    restored = tmp_path / "restored"
    _submit("jobs/restore.py", "tree/", str(restored), master=cluster)
    for path in files:
        assert (restored / "tree" / path.relative_to(source)).read_bytes() == path.read_bytes(), path

    on_cluster, on_local = tmp_path / "stats-cluster", tmp_path / "stats-local"
    _submit("jobs/dedup_stats.py", "--out", str(on_cluster), master=cluster)
    _submit("jobs/dedup_stats.py", "--out", str(on_local), master="local[2]")
    stats = json.loads((on_cluster / "dedup_stats.json").read_text())
    assert stats == json.loads((on_local / "dedup_stats.json").read_text())
    assert stats["totals"]["files"] == len(files)

    verify_json = tmp_path / "verify.json"
    _submit("jobs/verify.py", "--json", str(verify_json), master=cluster)
    checked = json.loads(verify_json.read_text())
    assert checked["blocks_checked"] > 0
    assert set(checked["problems"].values()) == {0} and checked["damaged_files"] == 0, checked

    removed = run_casstor("rm", f"tree/{files[0].relative_to(source)}")
    assert removed.returncode == 0, removed.stderr
    reclaimed = _submit("jobs/reclaim.py", "--online", master=cluster)
    assert int(re.search(r"^\s*deleted\s+(\d+)", reclaimed, re.MULTILINE).group(1)) > 0, reclaimed

    # The master may not have filed the last application as completed yet when its spark-submit exits.
    master = standalone.state()
    assert len(master["completedapps"]) + len(master["activeapps"]) == 5, master


def test_an_executor_python_without_casstor_is_one_line(three_nodes: LocalCluster, standalone: StandaloneSpark,
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injects: the executors run a bare Python of the same version (a fresh venv: PySpark reaches it through
    the workers' PYTHONPATH, casstor and its dependencies do not). Checks: the ingest fails with exit 1 and one
    ``casstor:`` line naming the module and the setting to fix, and prints no traceback and no Java frame."""
    _use_store_on(three_nodes, monkeypatch)
    bare = tmp_path / "bare-python"
    venv.create(bare, with_pip=False)
    source = tmp_path / "src"
    write_versioned_tree(source, versions=1, files=2, file_bytes=1 << 16, seed=16)

    code, output = spark_submit("--conf", f"spark.pyspark.python={bare / 'bin' / 'python'}", "jobs/ingest.py",
                                str(source), "--prefix", "bare/", master=standalone.url, timeout=JOB_TIMEOUT_S)

    casstor_lines = [line for line in output.splitlines() if line.startswith("casstor:")]
    assert code == 1, output
    assert casstor_lines == [casstor_lines[0]] and "cannot import 'casstor_ops'" in casstor_lines[0], output
    assert "spark.pyspark.python" in casstor_lines[0], output
    assert "Traceback" not in output and not re.search(r"^\s+at [\w.$]+\(", output, re.MULTILINE), output
