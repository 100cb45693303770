"""Helpers shared by the tests (pytest discourages importing from conftest)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator, Protocol, TypeVar

from casstor_ops.cluster.launcher import ClusterPorts
from casstor_ops.store.coordination.commit_bound import set_commit_bound
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.engine.commit import version_row
from casstor_ops.store.engine.inline import head_columns
from casstor_ops.store.namespace.entries import Namespace
from casstor_ops.store.records import FileInfo
from casstor_ops.store.schema import StoreSettings

# CASSTOR_TEST_PORT_OFFSET lets several test sessions run side by side on one machine.
_OFFSET = int(os.environ.get("CASSTOR_TEST_PORT_OFFSET", "0"))
TEST_PORTS = ClusterPorts(cql=19042 + _OFFSET, storage=17000 + _OFFSET, jmx_base=17199 + _OFFSET)
THREE_NODE_PORTS = ClusterPorts(cql=29042 + _OFFSET, storage=27000 + _OFFSET, jmx_base=27199 + _OFFSET)
# The secured node of test_secure_cluster: three ports of the helper range 20000 + 10 * offset .. + 99.
SECURE_PORTS = ClusterPorts(cql=20080 + 10 * _OFFSET, storage=20081 + 10 * _OFFSET, jmx_base=20082 + 10 * _OFFSET)
# The node of test_serve_faults.
SERVE_FAULT_PORTS = ClusterPorts(cql=21042 + _OFFSET, storage=22000 + _OFFSET, jmx_base=22499 + _OFFSET)
SPARK_MASTER_PORT = 17077 + _OFFSET
SPARK_WEBUI_PORT = 18080 + _OFFSET  # the master's; worker i uses SPARK_WEBUI_PORT + i
# The session store's chunk sizes: the defaults before 64/192/1024 KiB. The tests' files of a few hundred KB span
# several blocks with them, as their cases need, and the store stands for one made before the default changed.
SESSION_SETTINGS = StoreSettings(chunk_min=16 * 1024, chunk_avg=48 * 1024, chunk_max=256 * 1024)
INLINE_MAX = SESSION_SETTINGS.chunk_min  # the inline_store fixture's: files of 1 B to 16 KiB are kept inline
CASSTOR = [sys.executable, "-m", "casstor_ops.cli.main"]
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


# A casstor command that starts its own Spark (reclaim, verify, upgrade, a tree store's test): no UI, as several
# test sessions share the machine's ports.
NO_UI = {"PYSPARK_SUBMIT_ARGS": "--conf spark.ui.enabled=false pyspark-shell"}


def run_bench(module: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``python -m bench.<module> ARGS`` from the project's root, as ``make bench`` does; output as text."""
    return subprocess.run([sys.executable, "-m", f"bench.{module}", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=dict(os.environ))


def run_casstor(*args: str, input: bytes | None = None, env: dict[str, str] | None = None,
                timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the ``casstor`` CLI in a subprocess, as a user would."""
    return subprocess.run([*CASSTOR, *args], input=input, capture_output=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def casstor_job(*args: str) -> tuple[int, str, str]:
    """Run a maintenance command (``casstor verify``, ``reclaim``, ``report``: it starts its own JVM); exit status,
    stdout, stderr."""
    run = run_casstor(*args, env=NO_UI, timeout=900)
    return run.returncode, run.stdout.decode(), run.stderr.decode()


def past_the_grace(cql) -> None:
    """Shorten the commit bound to 1 s and wait past forget's grace (2 x the bound): every superseded version and
    delete marker written so far is forgettable, so the next forget (reclaim's own, run first) drops it."""
    set_commit_bound(cql, 1)
    time.sleep(2.5)


def reclaim_all_but_heads(cql) -> None:
    """Run ``casstor reclaim`` with a commit bound of 1 s, past its grace: every version but the heads is forgotten
    and its blocks reclaimed, so what a head names must still be there afterwards (the bound is put back)."""
    past_the_grace(cql)
    try:
        reclaim = run_casstor("reclaim", env=NO_UI, timeout=900)
    finally:
        set_commit_bound(cql, SAFETY.commit_bound_s)
    assert reclaim.returncode == 0, reclaim.stderr.decode()[-2000:]


def run_notebook(name: str, out_dir, cwd: Path = ROOT, **parameters) -> Path:
    """Execute ``notebooks/<name>`` headless with papermill; returns the executed copy.

    ``cwd`` is the kernel's working directory: the project root (as the README's papermill line runs it) or
    ``ROOT / "notebooks"`` (Jupyter Lab's); a notebook must behave the same from both.
    """
    import papermill

    output = Path(out_dir) / name
    papermill.execute_notebook(str(ROOT / "notebooks" / name), str(output), parameters=parameters,
                               cwd=str(cwd), kernel_name="python3", progress_bar=False)
    return output


def printed_output(notebook: Path) -> str:
    """What an executed notebook's code cells printed (their stream outputs), in order."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    return "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.get("outputs", []) if out.get("output_type") == "stream")


def spark_submit(*args: str, master: str = "local[2]", env: dict[str, str] | None = None,
                 timeout: float = 600) -> tuple[int, str]:
    """Run ``spark-submit`` on a job as a user would; exit status and output.

    spark-submit pipes the Python driver's stderr into its stdout, so the
    job's progress and ``casstor:`` lines are read from both streams together.
    The test node's ``CASSTOR_HOME`` etc. are in ``os.environ``, which the job
    inherits; ``env`` adds to (or overrides) it.
    """
    run = subprocess.run([str(SPARK_SUBMIT), "--master", master, "--conf", "spark.ui.enabled=false", *args],
                         capture_output=True, text=True, timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})
    return run.returncode, run.stdout + run.stderr


class _Server(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


ServerT = TypeVar("ServerT", bound=_Server)


@contextlib.contextmanager
def running(server: ServerT) -> Iterator[ServerT]:
    """``server`` started, and stopped even if its start-up or a test fails (a fixture's ``with``)."""
    try:
        server.start()
        yield server
    finally:
        server.stop()


def stop_process(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM exactly ``process`` (a process the test started), then SIGKILL it if it is still there after ``timeout``."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def flip_block(cql, digest: bytes) -> None:
    """Flip the lowest bit of the first stored byte of block ``digest`` (a damaged block, as a node returns it)."""
    _flip_content(cql, f"{DATA_KS}.blocks", {"hash": digest})


def flip_inline(cql, file_id: str) -> None:
    """Flip the lowest bit of the first stored byte of inline file ``file_id``'s content, in its head's version
    row."""
    _flip_content(cql, f"{META_KS}.versions", {"id": file_id, "version": head_version(cql, file_id)})


def head_version(cql, file_id: str):
    """The version (timeuuid) of ``file_id``'s newest row in ``versions``."""
    return cql.execute(cql.prepare(f"SELECT version FROM {META_KS}.versions WHERE id = ? LIMIT 1"),
                       (file_id,)).one().version


def _flip_content(cql, table: str, key: dict) -> None:
    """Flip the lowest bit of the first byte of the ``content`` of ``table``'s row with the primary ``key``."""
    where = " AND ".join(f"{column} = ?" for column in key)
    content = cql.execute(cql.prepare(f"SELECT content FROM {table} WHERE {where}"), tuple(key.values())).one().content
    cql.execute(cql.prepare(f"UPDATE {table} SET content = ? WHERE {where}"),
                (bytes([content[0] ^ 1]) + content[1:], *key.values()))


def write_head(cql, file_id: str, version: uuid.UUID, size: int, digest: bytes, blocks: int,
               lone: bytes | None = None) -> FileInfo:
    """Commit ``version`` of ``file_id`` directly, as a store's commit does: its version row (naming its one block
    ``lone``, if given), then its directory entry (its block list, if any, is the caller's to write first).
    Returns the head written."""
    row = version_row(file_id, version, size, digest, blocks, None, head_columns(None, False), lone)
    cql.execute(Statements.for_session(cql).insert_version, row)
    info = FileInfo(file_id, version, size, digest, blocks, row[5], lone_block=lone)
    Namespace.for_session(cql, SESSION_SETTINGS.directory_rows).publish(info)
    return info


def head_rows(cql, columns: str = "id, version") -> list:
    """``columns`` of every file's head: each ID's newest row of ``versions``, unless it is a delete marker."""
    return [row for row in cql.execute(f"SELECT {columns}, deleted FROM {META_KS}.versions PER PARTITION LIMIT 1")
            if not row.deleted]


def block_lists(cql) -> dict[tuple[str, uuid.UUID], list[tuple[bytes, int]]]:
    """Every version's block list as ``(hash, size)`` rows in order, read with the driver apart from the code under
    test: its ``file_blocks`` rows, or a one-block version's ``lone_block`` (schema 6:
    :mod:`casstor_ops.store.blocks.block_list`)."""
    lists: dict[tuple[str, uuid.UUID], list[tuple[bytes, int]]] = {}
    for r in cql.execute(f"SELECT id, version, hash, size FROM {META_KS}.file_blocks"):
        lists.setdefault((r.id, r.version), []).append((r.hash, r.size))
    for r in cql.execute(f"SELECT id, version, size, lone_block FROM {META_KS}.versions"):
        if r.lone_block is not None:
            lists[r.id, r.version] = [(r.lone_block, r.size)]
    return lists


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Write each ``files[relative path]`` below ``root``, making the directories on the way."""
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def secret_file(path: Path, kind: str, text: str = "s3cret\n") -> Path:
    """``path`` made as ``kind``: a file holding ``text`` with that octal mode ("0600", "0644"), a "directory" or
    a "fifo" (opening it waits for a writer)."""
    if kind == "directory":
        path.mkdir(mode=0o700)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.write_text(text)
        path.chmod(int(kind, 8))
    return path


def put(store, file_id: str, data: bytes) -> None:
    """Store ``data`` under ``file_id``."""
    store.put(io.BytesIO(data), file_id)


def restored(store, file_id: str) -> bytes:
    """The content a restore of ``file_id`` writes."""
    out = io.BytesIO()
    store.restore(file_id, out)
    return out.getvalue()


class SleepingClock:
    """A module's ``time`` in a unit test: ``monotonic`` moves only by ``sleep`` (each one recorded) and ``advance``.

    Example: ``monkeypatch.setattr(claims_module, "time", SleepingClock())``.
    """

    def __init__(self, start: float = 100.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds
