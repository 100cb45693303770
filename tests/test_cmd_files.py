"""The file commands as a user runs them: JSON output, one-line errors, kill -9, maintenance refusal."""

import json
import os
import pty
import signal
import subprocess
import time

import pytest

from casstor_ops.errors import EXIT_CORRUPT, EXIT_MAINTENANCE, EXIT_USAGE
from casstor_ops.store.coordination.reclaim_window import WindowMode, close_window, open_window
from casstor_ops.store.cql.keyspaces import DATA_KS, META_KS

from .support import CASSTOR, run_casstor


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("casstor: "), proc.stderr
    return lines[0]


def test_store_restore_ls_stat_stats_rm(cql, tmp_path):
    data = os.urandom(500_000)
    (tmp_path / "src").write_bytes(data)
    proc = run_casstor("store", str(tmp_path / "src"), "cli/ü file", "--json")
    assert proc.returncode == 0 and proc.stderr == b""  # no progress bar when not on a terminal
    result = json.loads(proc.stdout)
    assert set(result) == {"id", "bytes", "blocks", "new_blocks", "new_bytes", "seconds", "new_stored_bytes"}
    assert (result["id"], result["bytes"]) == ("cli/ü file", 500_000)

    proc = run_casstor("restore", "cli/ü file", "-")
    assert proc.returncode == 0 and proc.stdout == data
    piped = run_casstor("store", "-", "piped/stdin", "--json", input=data)
    assert piped.returncode == 0 and json.loads(piped.stdout)["new_blocks"] == 0
    proc = run_casstor("restore", "cli/ü file", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 0 and (tmp_path / "out").read_bytes() == data

    listed = json.loads(run_casstor("ls", "cli/", "--json").stdout)
    assert [f["id"] for f in listed] == ["cli/ü file"] and listed[0]["size"] == 500_000
    assert "cli/ü file" in run_casstor("ls", "cli/").stdout.decode()
    assert "size: 500000" in run_casstor("stat", "cli/ü file").stdout.decode()
    totals = json.loads(run_casstor("stats", "--json").stdout)
    assert {"files", "logical_bytes", "unique_blocks", "unique_bytes", "stored_bytes", "dedup_ratio",
            "compression_ratio"} <= set(totals)
    assert all(isinstance(totals[k], int)
               for k in ("files", "logical_bytes", "unique_blocks", "unique_bytes", "stored_bytes"))

    assert run_casstor("rm", "cli/ü file").returncode == 0
    assert "no such file" in _one_line_error(run_casstor("stat", "cli/ü file"))


def test_progress_bar_on_a_terminal(cql, tmp_path):
    (tmp_path / "src").write_bytes(os.urandom(6_000_000))
    leader, follower = pty.openpty()
    proc = subprocess.run([*CASSTOR, "store", str(tmp_path / "src"), "cli/tty"], stderr=follower,
                          capture_output=False, stdout=subprocess.PIPE, timeout=300)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0
    assert b"store" in shown and b"B/s" in shown


@pytest.mark.parametrize("args, expected", [
    (("store", "/nonexistent/file", "x"), "No such file"),
    (("restore", "never-stored/", "/dev/null"), "exists and is not a directory"),
    (("store", "/proc/self/mem", "x"), "Input/output error"),
    (("restore", "never-stored", "-"), "no such file"),
    (("stat", "never-stored"), "no such file"),
    (("rm", "never-stored"), "no such file"),
])
def test_bad_input_is_one_line_and_non_zero(cql, args, expected):
    assert expected in _one_line_error(run_casstor(*args))


@pytest.mark.parametrize("file_id, expected", [
    ("cli/a//b", "file ID 'cli/a//b': empty, '.' and '..' path segments are refused"),
    ("/cli/a", "file ID '/cli/a': empty, '.' and '..' path segments are refused"),
    ("cli/a\nb", "file ID 'cli/a\\nb' contains a control character '\\n'"),
])
def test_store_refuses_ambiguous_or_control_ids(cql, tmp_path, file_id, expected):
    """Injects 'casstor store' with IDs that alias another's restore path or hold a newline (both were stored);
    checks exit 2, one line, and that nothing was stored."""
    (tmp_path / "src").write_bytes(b"data")
    proc = run_casstor("store", str(tmp_path / "src"), file_id)
    assert proc.returncode == EXIT_USAGE
    assert expected in _one_line_error(proc)
    assert "no such file" in _one_line_error(run_casstor("stat", file_id))


def test_restore_refuses_existing_destination(cql, tmp_path):
    (tmp_path / "src").write_bytes(b"data")
    assert run_casstor("store", str(tmp_path / "src"), "cli/dest").returncode == 0
    (tmp_path / "dest").write_bytes(b"keep")
    assert "already exists" in _one_line_error(run_casstor("restore", "cli/dest", str(tmp_path / "dest")))
    assert (tmp_path / "dest").read_bytes() == b"keep"
    assert run_casstor("restore", "cli/dest", str(tmp_path / "dest"), "--force").returncode == 0
    assert (tmp_path / "dest").read_bytes() == b"data"


def test_corrupt_store_exits_3_and_leaves_no_dest(cql, tmp_path):
    (tmp_path / "src").write_bytes(os.urandom(400_000))
    assert run_casstor("store", str(tmp_path / "src"), "cli/corrupt").returncode == 0
    version = cql.execute(cql.prepare(f"SELECT version FROM {META_KS}.versions WHERE id = ?"), ("cli/corrupt",)).one()
    block = cql.execute(cql.prepare(f"SELECT hash FROM {META_KS}.file_blocks WHERE id = ? AND version = ?"),
                        ("cli/corrupt", version.version)).one()
    cql.execute(cql.prepare(f"DELETE FROM {DATA_KS}.blocks WHERE hash = ?"), (block.hash,))
    proc = run_casstor("restore", "cli/corrupt", str(tmp_path / "out"))
    assert proc.returncode == EXIT_CORRUPT
    assert block.hash.hex() in _one_line_error(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_store_is_refused_in_a_maintenance_window(cql, tmp_path):
    (tmp_path / "src").write_bytes(b"data")
    open_window(cql, holder="test-reclaim", mode=WindowMode.OFFLINE)
    try:
        proc = run_casstor("store", str(tmp_path / "src"), "cli/maintenance")
        assert proc.returncode == EXIT_MAINTENANCE
        assert "reclaim" in _one_line_error(proc)
        proc = run_casstor("rm", "cli/dest")
        assert proc.returncode == EXIT_MAINTENANCE
    finally:
        close_window(cql, "test-reclaim")


def _block_count(cql) -> int:
    return cql.execute(f"SELECT count(*) FROM {DATA_KS}.existing_blocks").one()[0]


def test_kill_9_during_store_keeps_the_old_version(cql, tmp_path):
    """Injects kill -9 into a store of new blocks; checks the old version stays committed, every index row the
    killed store wrote has its content (an index row follows its content's acknowledgement), and a re-run finds its blocks."""
    old, new = os.urandom(300_000), os.urandom(120_000_000)
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    assert run_casstor("store", str(tmp_path / "old"), "cli/killed").returncode == 0
    indexed_before = {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")}
    before = _block_count(cql)
    proc = subprocess.Popen([*CASSTOR, "store", str(tmp_path / "new"), "cli/killed"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _block_count(cql) < before + 100 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the store finished before it could be killed: use a bigger file"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    indexed = {r.hash for r in cql.execute(f"SELECT hash FROM {DATA_KS}.existing_blocks")} - indexed_before
    content = cql.prepare(f"SELECT content FROM {DATA_KS}.blocks WHERE hash = ?")
    without_content = [h for h in indexed if getattr(cql.execute(content, (h,)).one(), "content", None) is None]
    assert indexed and not without_content

    proc = run_casstor("restore", "cli/killed", "-")
    assert proc.returncode == 0 and proc.stdout == old
    again = run_casstor("store", str(tmp_path / "new"), "cli/killed", "--json")
    assert again.returncode == 0
    result = json.loads(again.stdout)
    assert result["new_blocks"] < result["blocks"]  # the killed run's blocks were kept and found
    proc = run_casstor("restore", "cli/killed", str(tmp_path / "restored"))
    assert proc.returncode == 0 and (tmp_path / "restored").read_bytes() == new


def test_store_of_a_fifo_is_refused_unless_read_as_stdin(cql, tmp_path):
    """Injects a FIFO as SRC (the store used to block on it until a writer came); checks one line and a
    non-zero exit within the timeout, and that '--stdin' and '-' with the FIFO redirected in still store it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    line = _one_line_error(run_casstor("store", str(fifo), "piped/fifo", timeout=60))
    assert line == f"casstor: cannot store {str(fifo)!r}: is a FIFO: only regular files are stored by path " \
                   f"(pipe it to - or --stdin)"
    for args in (["--stdin"], ["-"]):
        writer = subprocess.Popen(["sh", "-c", f"printf piped > '{fifo}'"])
        with open(fifo, "rb") as stdin:
            proc = subprocess.run([*CASSTOR, "store", *args, "piped/fifo", "--json"], stdin=stdin,
                                  capture_output=True, timeout=60)
        writer.wait(timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["bytes"] == len(b"piped")
    assert "give SRC or --stdin" in _one_line_error(run_casstor("store", "--stdin", str(fifo), "piped/x"))
