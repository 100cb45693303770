"""casstor_ops.spark.worker_imports: in a PySpark worker, a task's cache invalidation reads only the zips that
changed; anywhere else nothing changes. Each case runs in a Python process of its own (the change is
process-wide)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# Counts the zip directory reads of invalidations, as PySpark's worker makes one before each task.
_SCRIPT = textwrap.dedent("""
    import importlib, sys, types, zipfile, zipimport
    archive = sys.argv[1]
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zm_first.py", "VALUE = 1\\n")
    sys.path.insert(0, archive)
    import zm_first
    if sys.argv[2] == "worker":
        sys.modules.setdefault("pyspark.worker", types.ModuleType("pyspark.worker"))
    from casstor_ops.spark.worker_imports import reread_changed_archives_only
    applied = reread_changed_archives_only()
    reads = []
    original = zipimport._read_directory
    zipimport._read_directory = lambda path: reads.append(path) or original(path)
    counts = []
    for _ in range(3):
        importlib.invalidate_caches()
        counts.append(len(reads))
    with zipfile.ZipFile(archive, "a") as z:  # the archive changes: the next invalidation must see it
        z.writestr("zm_second.py", "VALUE = 2\\n")
    importlib.invalidate_caches()
    counts.append(len(reads))
    import zm_second
    print(applied, counts, zm_first.VALUE + zm_second.VALUE)
""")


def _run(tmp_path: Path, where: str) -> str:
    run = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path / "mods.zip"), where], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_in_a_worker_unchanged_archives_are_not_read_again_and_a_changed_one_is(tmp_path: Path) -> None:
    # One read at the first invalidation (no signature yet), none at the next two, one once the archive changed;
    # the module added to it imports.
    assert _run(tmp_path, "worker") == "True [1, 1, 1, 2] 3"


def test_outside_a_worker_nothing_changes(tmp_path: Path) -> None:
    # Python 3.11's own zipimporter (the project's Python): every invalidation reads the archive again.
    assert _run(tmp_path, "driver") == "False [1, 2, 3, 4] 3"
