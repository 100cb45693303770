"""One replica's SSTable of the blocks table damaged on disk (RF 3): found, never served, repaired.

Injected: node 3 of three is flushed (``nodetool flush``) and killed, one byte in the middle of a stored
block's content is flipped inside a ``casstor_data/blocks-*/*-Data.db`` file of node 3 (found by searching the
file for that block's bytes: random content is kept raw by casstor's codec, and the blocks table of a
compressing store has NoopCompressor: raw bytes in checksummed chunks), and node 3 is started again.

Checked, in the order an operator meets it: node 3's own ``nodetool verify --extended-verify`` finds the
damage before any read touched it (a read that hits the damaged chunk fails its checksum and marks the SSTable
suspect, and verify then skips it until a restart: measured, ``docs/operations.md``); every file restores
byte-exact three times over (or, when a QUORUM read reached node 3's damaged chunk, which node 3 refuses while
the coordinator does not ask another replica, fails with one line that names the read failure and points at a
damaged replica, exit 1, and leaves no DEST; a block that reached the client changed fails its hash, exit 3),
and ``jobs/verify.py`` is clean, or stops with that same one-line read failure (exit 1). Then what ``docs/operations.md`` ("A damaged
replica") tells an operator to do: stop node 3, ``sstablescrub`` (offline: it rewrites a suspect SSTable too,
dropping the rows that fail their checksums), start it, ``nodetool repair -full`` (the rows stream back):
node 3's extended verify passes, every file restores byte-exact, and verify is clean.

Marked ``cluster``: ``make test-all`` runs it.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from casstor_ops.cluster.connection import connect, endpoint_from_env
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.errors import CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.schema import init_store

from .faults import sha256, submit, three_node_env
from .support import run_casstor

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(2400)]

DAMAGED = 3
FILES = 12
FILE_BYTES = 512 << 10
SPARK_LOG_LINE = re.compile(r"\d\d:\d\d:\d\d (INFO|WARN|ERROR) ")  # spark-submit's log4j lines (HH:mm:ss LEVEL)
READ_ROUNDS = 3  # restores of every file: QUORUM picks two replicas of three, so each round may hit node 3


def _flip_a_byte_of(content: bytes, data_files: list[Path]) -> tuple[Path, int]:
    """Flip one byte of ``content`` where a Data.db file holds it verbatim; the file and the offset.

    Several needles from the middle on: one that straddles a compression chunk's end (the table's chunks carry
    a checksum after each 16 KiB) is not verbatim in the file.
    """
    middle = len(content) // 2
    needles = [content[at:at + 64] for at in range(middle, len(content) - 64, 4096)]
    for path in data_files:
        data = path.read_bytes()
        at = next((found for found in map(data.find, needles) if found >= 0), -1)
        if at >= 0:
            with open(path, "r+b") as file:
                file.seek(at + 32)
                original = file.read(1)
                file.seek(at + 32)
                file.write(bytes([original[0] ^ 0xFF]))
            return path, at + 32
    raise AssertionError(f"no block content found verbatim in {data_files}")


def _stored_on_every_replica(work: Path) -> dict[str, Path]:
    """Store FILES random files at consistency ALL: at QUORUM a store may return before node 3 applied its
    blocks, and a flush then misses them (seen on a loaded machine: no block content in node 3's Data.db)."""
    writer = connect(replace(endpoint_from_env(), consistency="ALL"))
    try:
        store, files = Store(writer), {}
        for i in range(FILES):
            path = work / f"f{i}.bin"
            path.write_bytes(os.urandom(FILE_BYTES))
            store.put(path, f"sst/f{i}.bin")
            files[f"sst/f{i}.bin"] = path
        return files
    finally:
        writer.cluster.shutdown()


@pytest.fixture(scope="module")
def damaged(three_nodes: LocalCluster, tmp_path_factory: pytest.TempPathFactory):
    with three_node_env(three_nodes):
        work = tmp_path_factory.mktemp("sstable")
        session = connect(endpoint_from_env())
        try:
            init_store(session)
            store = Store(session)
            files = _stored_on_every_replica(work)
            three_nodes.nodetool("flush", DATA_KS, "blocks", node=DAMAGED)
            three_nodes.node(DAMAGED).kill()  # no drain: the flushed SSTable is the one damaged
            table_dirs = list((three_nodes.node(DAMAGED).root / "data" / "data" / DATA_KS).glob("blocks-*"))
            flipped = _flip_a_byte_of(files["sst/f0.bin"].read_bytes(),
                                      [p for d in table_dirs for p in d.glob("*-Data.db")])
            three_nodes.start_node(DAMAGED, log=lambda _: None)
            yield three_nodes, store, files, flipped, work
        finally:
            session.cluster.shutdown()


def _restores(store_files: dict[str, Path], work: Path, rounds: int, label: str) -> list[str]:
    """Restore every file ``rounds`` times with the CLI: each byte-exact, or exit 3 naming the block; the failures."""
    failures = []
    for round_ in range(rounds):
        for file_id, src in store_files.items():
            dest = work / f"restore-{label}-{round_}-{src.name}"
            result = run_casstor("restore", file_id, str(dest), "--quiet")
            err = result.stderr.decode()
            if result.returncode == 0:
                assert sha256(dest) == sha256(src), file_id
            elif result.returncode == 1:  # a QUORUM read reached node 3's damaged chunk, which node 3 refuses
                assert err.startswith("casstor: Cassandra request failed: ReadFailure") and err.count("\n") == 1, err
                assert "CorruptSSTableException" in err and not dest.exists(), err
                failures.append(err.strip())
            else:
                assert result.returncode == 3 and "block " in err, err
                failures.append(err.strip())
    return failures


def _verify(work: Path, name: str) -> tuple[int, str]:
    return submit("jobs/verify.py", log=work / f"{name}.log").wait()


def _node_verify(cluster: LocalCluster) -> str | None:
    """``nodetool verify --force --extended-verify`` of the blocks table on the damaged node: None when clean, else
    its one-line failure."""
    try:
        cluster.nodetool("verify", "--force", "--extended-verify", DATA_KS, "blocks", node=DAMAGED)
    except CasstorError as err:
        return str(err)
    return None


def test_damaged_replica_is_found_never_served_and_repaired(damaged) -> None:
    """Injects one flipped byte in node 3's copy of a block (see the module docstring). Checks: node 3's own
    extended verify finds the damage; restores stay byte-exact and verify is clean, or either fails with one line
    naming the read failure and the damaged replica (exit 1), never with changed bytes; after an offline scrub and a repair of node 3 its extended verify passes, and so do restores and
    verify."""
    cluster, store, files, (data_file, offset), work = damaged
    found = _node_verify(cluster)
    print(f"flipped byte {offset} of {data_file.name}; node 3's verify: {found}")
    assert found is not None
    failures = _restores(files, work, READ_ROUNDS, "damaged")
    code, output = _verify(work, "verify-damaged")
    print(f"restores failed {len(failures)} times; verify exit {code}")
    if code != 0:  # its QUORUM read reached node 3's damaged chunk: the coordinator does not try another replica
        # Spark logs the failed task itself (its timestamped WARN and ERROR lines, some of them after casstor's
        # report: executor threads still stopping); casstor's report is the one line that ends the rest.
        last = [line for line in output.strip().splitlines() if not SPARK_LOG_LINE.match(line)][-1]
        assert code == 1 and last.startswith("casstor: Cassandra request failed: ReadFailureException"), output[-5000:]
        assert "CorruptSSTableException" in last and output.count("casstor:") == 1, output[-5000:]
    else:
        assert "no problems" in output, output[-5000:]

    cluster.node(DAMAGED).stop(log=lambda _: None)
    cluster.offline_scrub(DATA_KS, "blocks", node=DAMAGED)
    cluster.start_node(DAMAGED, log=lambda _: None)
    cluster.nodetool("repair", "-full", DATA_KS, "blocks", node=DAMAGED, timeout=600)
    assert _node_verify(cluster) is None
    assert _restores(files, work, 1, "repaired") == []
    code, output = _verify(work, "verify-repaired")
    assert code == 0 and "no problems" in output, output[-5000:]
