"""Point-in-time access as a user runs it: ``ls --versions``, ``restore --version/--at`` of a file and of a tree,
``diff``, ``casstor serve``'s ``?version=``/``?at=``, and ``jobs/restore.py --at``: real CLI subprocesses, a real
server, ``spark-submit``, the real node. No reclaim runs here (until retention lands it frees superseded versions).
"""

from __future__ import annotations

import io
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest

from casstor_ops.errors import EXIT_USAGE
from casstor_ops.store.api import Store
from casstor_ops.store.records import ObjectMeta

from .serve_support import Server
from .support import run_casstor, spark_submit


def _now() -> str:
    """This instant, as a user would give it, between two stores (the versions' times are on both sides)."""
    time.sleep(0.05)
    when = datetime.now(timezone.utc).isoformat()
    time.sleep(0.05)
    return when


def _ok(*args: str) -> bytes:
    proc = run_casstor(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _one_line_error(proc, code: int | None = None) -> str:
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert code is None or proc.returncode == code, proc
    return lines[0]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def test_versions_and_delete_markers_round_trip_byte_exact(cql, tmp_path: Path) -> None:
    v1, v2 = os.urandom(400_000), os.urandom(123_456)
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    _ok("store", str(tmp_path / "v1"), "hist/file.bin", "-q")
    between = _now()
    _ok("store", str(tmp_path / "v2"), "hist/file.bin", "-q")
    before_rm = _now()
    _ok("rm", "hist/file.bin")

    versions = json.loads(_ok("ls", "--versions", "hist/file.bin", "--json"))
    assert [(v["deleted"], v["size"]) for v in versions] == [(True, 0), (False, len(v2)), (False, len(v1))]
    assert {"version", "committed_at", "size", "hash", "deleted"} <= set(versions[0])
    assert versions[1]["committed_at"] > versions[2]["committed_at"] and versions[1]["hash"] != versions[2]["hash"]
    text = _ok("ls", "--versions", "hist/file.bin").decode().splitlines()
    assert len(text) == 3 and text[0].startswith(versions[0]["version"]) and text[0].endswith("deleted")

    assert _ok("restore", "hist/file.bin", "-", "--version", versions[2]["version"]) == v1
    assert _ok("restore", "hist/file.bin", "-", "--version", versions[1]["version"]) == v2
    assert _ok("restore", "hist/file.bin", "-", "--at", between) == v1
    assert _ok("restore", "hist/file.bin", "-", "--at", before_rm) == v2
    _ok("restore", "hist/file.bin", str(tmp_path / "out"), "--at", between.replace("+00:00", ""), "-q")  # UTC
    assert (tmp_path / "out").read_bytes() == v1

    # Removed: gone from ls and from a plain restore, and nothing to restore at or after the marker.
    assert "hist/file.bin" not in _ok("ls", "hist/").decode()
    assert "no such file" in _one_line_error(run_casstor("restore", "hist/file.bin", "-"))
    assert "no such file" in _one_line_error(run_casstor("restore", "hist/file.bin", "-", "--at", _now()))
    assert "no such file" in _one_line_error(run_casstor("restore", "hist/file.bin", "-",
                                                         "--version", versions[0]["version"]))
    assert "no such file" in _one_line_error(run_casstor("restore", "hist/file.bin", "-",
                                                         "--at", "2000-01-01T00:00:00Z"))


def _tombstones_read(cql, file_id: str) -> list[int]:
    """The tombstone cells the node reports stepping over to read every version row of ``file_id`` (a query trace)."""
    trace = cql.execute("SELECT * FROM casstor_meta.versions WHERE id = %s", (file_id,), trace=True).get_query_trace()
    found = [re.search(r"Read (\d+) live rows and (\d+) tombstone cells", event.description) for event in trace.events]
    return [int(match.group(2)) for match in found if match]


def test_a_version_row_is_written_without_tombstones(cql) -> None:
    """Checks that the rows of two versions of a stream (no source attributes) and of an S3 object with no metadata,
    headers, tags or parts are read back as written, and that reading them steps over no tombstone cell. Before, a
    null was bound for each absent attribute and empty collection: the stream's two versions read 8 tombstones."""
    store, stream, obj = Store(cql), f"rows-{os.getpid()}/stream", f"rows-{os.getpid()}/object"
    store.put(io.BytesIO(b"first"), stream)
    store.put(io.BytesIO(b"second"), stream)
    store.put(io.BytesIO(b"object"), obj, object_meta=lambda: ObjectMeta("e" * 32, None, {}))
    for file_id, versions in ((stream, 2), (obj, 1)):
        rows = list(cql.execute("SELECT mode, mtime_ns, ino, ctime_ns, user_meta, tags, parts FROM "
                                "casstor_meta.versions WHERE id = %s", (file_id,)))
        assert len(rows) == versions and all(set(row) == {None} for row in rows)
        assert _tombstones_read(cql, file_id) == [0]
    out = io.BytesIO()
    store.restore(stream, out)
    assert out.getvalue() == b"second"


@pytest.mark.parametrize("args", [
    ("restore", "hist/x", "-", "--at", "yesterday"),
    ("restore", "hist/x", "-", "--version", "not-a-version"),
    ("restore", "hist/x", "-", "--at", "2026-01-01", "--version", "00000000-0000-1000-8000-000000000000"),
    ("restore", "hist/", "/tmp/never", "--version", "00000000-0000-1000-8000-000000000000"),
    ("diff", "hist/", "--from", "2026-02-30"),
    ("diff", "hist/"),
])
def test_a_bad_time_or_version_is_one_line_and_exit_2(cql, args) -> None:
    _one_line_error(run_casstor(*args), EXIT_USAGE)


@dataclass
class History:
    first: dict[str, bytes]   # the tree at the first store (relative path -> content)
    second: dict[str, bytes]  # in the store after the second
    between: str              # a time between the two


# The first tree; the second changes a.bin, removes sub/c.txt (casstor rm), adds new.txt and sub/deeper/d.bin.
FIRST = {"a.bin": os.urandom(300_000), "keep.txt": b"kept as is\n", "sub/b.txt": b"b\n",
         "sub/c.txt": os.urandom(70_000)}
SECOND_CHANGES = {"a.bin": os.urandom(310_000), "new.txt": b"new\n", "sub/deeper/d.bin": os.urandom(90_000)}


@pytest.fixture(scope="module")
def history(cql, tmp_path_factory: pytest.TempPathFactory) -> History:
    src = tmp_path_factory.mktemp("history") / "src"
    _write(src, FIRST)
    _ok("store", str(src), "tree-at/", "-q")
    between = _now()
    _write(src, SECOND_CHANGES)
    (src / "sub/c.txt").unlink()
    _ok("store", str(src), "tree-at/", "-q")
    _ok("rm", "tree-at/sub/c.txt")
    return History(dict(FIRST), _tree(src), between)


def test_a_tree_restored_at_the_first_time_is_the_first_tree(history: History, tmp_path: Path) -> None:
    _ok("restore", "tree-at/", str(tmp_path / "then"), "--at", history.between, "-q")
    assert _tree(tmp_path / "then") == history.first
    _ok("restore", "tree-at/", str(tmp_path / "now"), "-q")
    assert _tree(tmp_path / "now") == history.second
    _ok("restore", "tree-at/sub/", str(tmp_path / "sub-then"), "--at", history.between, "-q")
    assert _tree(tmp_path / "sub-then") == {"b.txt": b"b\n", "c.txt": FIRST["sub/c.txt"]}
    proc = run_casstor("restore", "tree-at/", str(tmp_path / "long-ago"), "--at", "2000-01-01")
    assert "no file in the store has an id starting with 'tree-at/' at 2000-01-01" in _one_line_error(proc)


def test_diff_reports_exactly_the_changes(history: History) -> None:
    diff = json.loads(_ok("diff", "tree-at/", "--from", history.between, "--json"))
    assert [f["id"] for f in diff["added"]] == ["tree-at/new.txt", "tree-at/sub/deeper/d.bin"]
    assert [f["id"] for f in diff["removed"]] == ["tree-at/sub/c.txt"]
    assert [(c["id"], c["from"]["size"], c["to"]["size"]) for c in diff["changed"]] == [
        ("tree-at/a.bin", 300_000, 310_000)]
    assert diff["totals"] == {"added": 2, "added_bytes": 4 + 90_000, "removed": 1, "removed_bytes": 70_000,
                              "changed": 1, "changed_bytes": 310_000}
    text = _ok("diff", "tree-at/", "--from", history.between).decode().splitlines()
    assert [line.split()[0] for line in text[:-1]] == ["M", "+", "-", "+"]
    assert text[-1].startswith("diff: 2 added")
    same = json.loads(_ok("diff", "tree-at/", "--from", history.between, "--to", history.between, "--json"))
    assert same["totals"]["added"] == same["totals"]["removed"] == same["totals"]["changed"] == 0
    backwards = json.loads(_ok("diff", "tree-at/sub/", "--from", _now(), "--to", history.between, "--json"))
    assert [f["id"] for f in backwards["added"]] == ["tree-at/sub/c.txt"]


def test_spark_restore_at_restores_exactly_the_versions_then(history: History, tmp_path: Path) -> None:
    code, output = spark_submit("jobs/restore.py", "tree-at/", str(tmp_path / "dest"), "--at", history.between)
    assert code == 0, output
    assert _tree(tmp_path / "dest" / "tree-at") == history.first
    code, output = spark_submit("jobs/restore.py", "tree-at/", str(tmp_path / "bad"), "--at", "soon")
    assert code == EXIT_USAGE and "time 'soon'" in output and "Traceback" not in output


@pytest.fixture(scope="module")
def server(cql) -> Iterator[Server]:
    running = Server()
    yield running
    code, log = running.stop()
    assert code == 0, log


def _get(server: Server, key: str, query: str = "", method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(server.url(key) + query, method=method)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def test_serve_answers_a_version_or_a_time_and_names_the_version(server: Server, cql) -> None:
    v1, v2 = os.urandom(2_500_000), os.urandom(5_000)  # streamed, and answered in one piece
    store = Store(cql)
    store.put(io.BytesIO(v1), "serve-hist/f")
    between = _now()
    store.put(io.BytesIO(v2), "serve-hist/f")
    old, new = (v.file.version for v in reversed(store.versions("serve-hist/f")))

    status, headers, body = _get(server, "serve-hist/f")
    assert (status, headers["x-casstor-version"], body) == (200, str(new), v2)
    status, headers, body = _get(server, "serve-hist/f", f"?version={old}")
    assert (status, headers["x-casstor-version"], body) == (200, str(old), v1)
    status, headers, body = _get(server, "serve-hist/f", f"?at={between.replace('+00:00', 'Z')}")
    assert (status, headers["x-casstor-version"], body) == (200, str(old), v1)
    status, headers, body = _get(server, "serve-hist/f", f"?version={old}", method="HEAD")
    assert (status, headers["x-casstor-version"], headers["content-length"], body) == (200, str(old), str(len(v1)),
                                                                                       b"")
    assert _get(server, "serve-hist/f", "?at=2000-01-01")[0] == 404
    for query in ("?at=soon", "?version=v1", f"?version={old}&at=2026-01-01"):
        status, _, body = _get(server, "serve-hist/f", query)
        assert status == 400 and body.count(b"\n") == 1, (query, body)


def test_the_demo_history_part_restores_the_first_version(cql, tmp_path: Path, capsys) -> None:
    from casstor_ops.cli.cmd_demo import HISTORY_ID, _history

    (tmp_path / "sample").mkdir()
    (tmp_path / "sample" / "f.bin").write_bytes(os.urandom(600_000))
    _history(Store(cql), tmp_path / "sample")
    shown = capsys.readouterr().out
    assert f"casstor ls --versions {HISTORY_ID}" in shown and "the first version, byte-exact" in shown
    assert len(Store(cql).versions(HISTORY_ID)) >= 2
