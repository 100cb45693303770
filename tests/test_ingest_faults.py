"""Bad input in a Spark ingest on the real test node (local[2]): each fails one file, clearly, and nothing hangs.

Driver errors are injected inside the Spark task by a work function that raises the driver exception for
one chosen file and stores the others with the real ingest work: the Python workers are not forked from
this process (monkeypatching here would not reach them), so this module is shipped to them by value.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionBusy, ConnectionException
from pyspark import cloudpickle

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env
from casstor_ops.errors import EXIT_PARTIAL, EXIT_UNREACHABLE, EXIT_USAGE, CasstorError
from casstor_ops.spark.bulk_ingest import ingest, ingest_job
from casstor_ops.spark.bulk_report import finish
from casstor_ops.spark.bulk_restore import restore_many
from casstor_ops.spark.bulk_tasks import run_bulk
from casstor_ops.store.trees.source_listing import list_source
from casstor_ops.store.api import Store

cloudpickle.register_pickle_by_value(sys.modules[__name__])
TIMEOUT_S = 240
REFUSED = {"127.0.0.1:9": ConnectionRefusedError(111, "Connection refused")}
# File name -> the driver error its store raises.
DRIVER_ERRORS: dict[str, Callable[[], Exception]] = {
    "no-host.bin": lambda: NoHostAvailable("Unable to complete the operation against any hosts", REFUSED),
    "closed.bin": lambda: ConnectionException("Connection to 127.0.0.1 was closed"),
    "busy.bin": lambda: ConnectionBusy("Connection to 127.0.0.1 is busy"),
    "timed-out.bin": lambda: OperationTimedOut("errors={}, last_host=127.0.0.1:19042"),
}


def _faulty(work: Callable, errors: dict[str, Callable[[], Exception]]) -> Callable:
    """The ingest's work, raising ``errors[name]()`` instead for the files so named (runs on the executors)."""
    def run(store: Store, entry: Any, row: dict[str, Any], scope: Any) -> None:
        make = errors.get(os.path.basename(entry.path))
        if make is not None:
            raise make()
        work(store, entry, row, scope)

    return run


def _tree(root: Path, names: list[str]) -> Path:
    root.mkdir()
    for name in names:
        (root / name).write_bytes(os.urandom(20_000) + name.encode())
    return root


def _rows(df) -> dict[str, dict]:
    return {r.id: r.asDict() for r in df.collect()}


def _finish(results, tmp_path: Path) -> tuple[int, dict]:
    report = tmp_path / "report.json"
    code = finish(results, "ingest", str(report))
    return code, {f["id"]: f for f in json.loads(report.read_text())["files"]}


@pytest.fixture()
def store(empty_store) -> Store:
    return Store(empty_store)


def test_unreadable_directory_is_a_failed_path(spark, store: Store, tmp_path: Path) -> None:
    """Injects a directory the kernel refuses to list (its path is longer than PATH_MAX: ENAMETOOLONG, a real
    fault that root cannot bypass, unlike chmod 000); checks the ingest reports it as a failed path with its id
    and a one-line error in the report, stores the rest and exits 4 (os.walk used to skip it and exit 0)."""
    src = _tree(tmp_path / "src", ["ok.bin"])
    fd = os.open(src, os.O_RDONLY)
    depth = 0
    while len(str(src)) + 256 * depth < 4200:  # mkdir relative to a descriptor: each call's path stays short
        os.mkdir("d" * 250, dir_fd=fd)
        fd, old = os.open("d" * 250, os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
        depth += 1
    os.close(fd)
    code, report = _finish(ingest(spark, src, prefix="u/"), tmp_path)
    assert code == EXIT_PARTIAL
    failed = [row for row in report.values() if row["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["id"].startswith("u/ddd") and failed[0]["id"].endswith("/")
    assert failed[0]["error"] == "cannot list the directory: File name too long"
    assert report["u/ok.bin"]["status"] == "stored"


def test_fifo_swapped_in_after_listing_fails_alone(spark, store: Store, tmp_path: Path) -> None:
    """Injects a FIFO in place of a listed file between the listing and the Spark task (an ingest task used to
    block on it forever); checks, within a bounded time, that file fails with one line and the others are
    stored. On a regression the test writes to the FIFO's other end, so it fails instead of hanging."""
    src = _tree(tmp_path / "src", ["a.bin", "swapped.bin", "c.bin"])
    files = list_source(src, prefix="f/")
    (src / "swapped.bin").unlink()
    os.mkfifo(src / "swapped.bin")
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(
        _rows(run_bulk(spark, ingest_job(), files, endpoint_from_env(), parallelism=1))), daemon=True)
    worker.start()
    worker.join(TIMEOUT_S)
    if worker.is_alive():
        os.close(os.open(src / "swapped.bin", os.O_WRONLY))  # end of file for the blocked reader
        worker.join(TIMEOUT_S)
        pytest.fail("the ingest blocked on a FIFO")
    rows = outcome[0]
    assert rows["f/swapped.bin"]["status"] == "failed"
    assert rows["f/swapped.bin"]["error"] == (f"cannot store {str(src / 'swapped.bin')!r}: is a FIFO: only regular "
                                              f"files are stored by path (pipe it to - or --stdin)")
    assert rows["f/a.bin"]["status"] == rows["f/c.bin"]["status"] == "stored"


def test_driver_errors_fail_their_file_and_the_job_goes_on(spark, store: Store, tmp_path: Path) -> None:
    """Injects NoHostAvailable, ConnectionException, ConnectionBusy and OperationTimedOut, each for one chosen
    file inside the Spark task (one task, so the others share it); checks each such file fails with a one-line
    error naming the error, the others are stored, and the report and exit status say 4 (three of these
    used to fail the whole Spark job with a traceback)."""
    src = _tree(tmp_path / "src", [*DRIVER_ERRORS, "fine.bin"])
    job = ingest_job()
    job = dataclasses.replace(job, work=_faulty(job.work, DRIVER_ERRORS))
    code, report = _finish(run_bulk(spark, job, list_source(src, prefix="e/"), endpoint_from_env(),
                                    parallelism=1), tmp_path)
    assert code == EXIT_PARTIAL
    assert report["e/fine.bin"]["status"] == "stored"
    for name in DRIVER_ERRORS:
        row = report[f"e/{name}"]
        assert row["status"] == "failed" and "\n" not in row["error"], row
    assert report["e/no-host.bin"]["error"].startswith("NoHostAvailable: Unable to complete the operation")
    assert report["e/busy.bin"]["error"] == "Connection to 127.0.0.1 is busy"
    assert {info.id for info in store.list("e/")} == {"e/fine.bin"}


def test_cluster_outage_ends_the_job_with_one_line_and_a_rerun_resumes(spark, store: Store, tmp_path: Path) -> None:
    """Injects NoHostAvailable (every host refused) for every file of one task of two (the other stores its
    file); checks the job ends with one CasstorError, exit 6, instead of reporting the cluster's outage as
    failed files, and that a plain re-run skips the stored file and stores the other."""
    src = _tree(tmp_path / "src", ["down.bin", "up.bin"])
    job = ingest_job()
    job = dataclasses.replace(job, work=_faulty(job.work, {"down.bin": DRIVER_ERRORS["no-host.bin"]}))
    with pytest.raises(CasstorError) as caught:
        run_bulk(spark, job, list_source(src, prefix="o/"), endpoint_from_env(), parallelism=2)
    assert caught.value.exit_code == EXIT_UNREACHABLE
    assert str(caught.value).startswith("ingest stopped, Cassandra is unreachable (1 of 2 files done, kept)")
    assert [info.id for info in store.list("o/")] == ["o/up.bin"]
    rerun = _rows(ingest(spark, src, prefix="o/"))
    assert (rerun["o/up.bin"]["status"], rerun["o/down.bin"]["status"]) == ("skipped", "stored")


def test_driver_that_cannot_connect_is_one_line(spark, store: Store, tmp_path: Path) -> None:
    """Injects an endpoint where nothing listens (port 9); checks one CasstorError, exit 6, before any task."""
    src = _tree(tmp_path / "src", ["a.bin"])
    with pytest.raises(CasstorError) as caught:
        ingest(spark, src, endpoint=Endpoint(("127.0.0.1",), 9, False))
    assert caught.value.exit_code == EXIT_UNREACHABLE and "\n" not in str(caught.value)


def test_non_utf8_names_round_trip_through_ingest_and_restore(spark, store: Store, tmp_path: Path) -> None:
    """Injects files named b"caf\\xe9.txt" (Latin-1) in a directory b"d\\xff", next to a valid name that looks
    like its escape; checks they are stored under distinct escaped IDs, and a bulk restore writes the same
    bytes to the same byte names (the ingest used to fail them, and the results DataFrame to die)."""
    src = tmp_path / "src"
    raw = os.fsencode(src)
    os.makedirs(raw + b"/d\xff")
    names = {b"d\xff/caf\xe9.txt": b"latin-1 name", b"caf\xef\xbf\xbdE9.txt": b"valid name with U+FFFD"}
    for name, data in names.items():
        with open(raw + b"/" + name, "wb") as out:
            out.write(data)
    rows = _rows(ingest(spark, src, prefix="n/"))
    assert set(rows) == {"n/d\ufffdFF/caf\ufffdE9.txt", "n/caf\ufffd\ufffdE9.txt"}
    assert {r["status"] for r in rows.values()} == {"stored"}, rows
    dest = tmp_path / "dest"
    restored = _rows(restore_many(spark, "n/", dest))
    assert {r["status"] for r in restored.values()} == {"restored"}, restored
    for name, data in names.items():
        with open(os.fsencode(dest) + b"/n/" + name, "rb") as back:
            assert back.read() == data


@pytest.mark.parametrize("prefix", ["/abs/", "data//"])
def test_prefix_that_makes_invalid_ids_stops_before_spark(spark, store: Store, tmp_path: Path, prefix: str) -> None:
    """Injects --prefix values the store refuses; checks one usage error (exit 2) and nothing stored, where
    every file used to fail alone (exit 4)."""
    src = _tree(tmp_path / "src", ["a.bin"])
    with pytest.raises(CasstorError) as caught:
        ingest(spark, src, prefix=prefix)
    assert caught.value.exit_code == EXIT_USAGE
    assert store.stats().files == 0
