"""One soak writer: stores, overwrites and removes files of its own until a deadline, logging each to a ledger.

Run as ``python -m tests.soak_writer WRITER SECONDS LEDGER`` (from the
project root, with the test node's ``CASSTOR_*`` environment). Its files are
``soak/w<WRITER>/f<n>``; their content is a random sequence of segments of
a pool every writer shares (so blocks are shared across files and writers)
plus one fresh segment (so overwritten and removed files leave garbage).
Writer :data:`BATCH_WRITER` stores its files through the small-file batch
(``Store.put_many``: a tree store's and a group commit's path), 2 to 4 files
of at most 1 MiB a batch, each logged as its own operation with the batch's
start and end; the others store one file at a time (``Store.put``).

The ledger gets one JSON line per operation, written after it returned:
``{"op": "store"|"overwrite"|"remove"|"failed", "id", "old", "new", "sha256",
"size", "start", "end"}`` (versions as text, times as ``time.time()``);
``old`` is the version superseded or removed. A failed operation (a one-line
CasstorError) is logged as ``failed`` with its ``error`` and ends the writer
(exit 1): the soak expects none. Any other exception ends it with a traceback.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from casstor_ops.cluster.connection import connect
from casstor_ops.errors import CasstorError
from casstor_ops.store.api import SmallFile, Store

POOL_SEGMENTS = 32
SEGMENT = 256 << 10   # ~5 chunks: the inner ones are shared by every file that has the segment
FRESH_MAX = 64 << 10
FILES_PER_WRITER = 8
REMOVE_CHANCE = 0.25
PAUSE_S = 0.25        # between operations: the soak's garbage must stay within what reclaim and verify keep up with
BATCH_WRITER = 2
BATCH_SEGMENTS = 3    # 3 segments and the fresh one: at most 832 KiB, a small file (batch_upload.SMALL_FILE_BYTES)


def shared_pool() -> list[bytes]:
    pool = random.Random(1414)
    return [pool.randbytes(SEGMENT) for _ in range(POOL_SEGMENTS)]


def content(rng: random.Random, pool: list[bytes], segments: int = 4) -> bytes:
    return b"".join(rng.choices(pool, k=rng.randint(1, segments))) + rng.randbytes(rng.randint(1, FRESH_MAX))


def run(writer: int, seconds: float, ledger: Path) -> None:
    rng = random.Random(writer)
    pool = shared_pool()
    session = connect(start=False)
    store = Store(session)
    heads: dict[str, str] = {}  # this writer's committed files -> their version
    deadline = time.time() + seconds
    with open(ledger, "a") as log, tempfile.TemporaryDirectory(prefix="soak-writer-") as scratch:
        src = Path(scratch) / "src"
        while time.time() < deadline:
            file_id = f"soak/w{writer}/f{rng.randrange(FILES_PER_WRITER)}"
            start = time.time()
            try:
                if heads.get(file_id) is not None and rng.random() < REMOVE_CHANCE:
                    store.remove(file_id)
                    entries = [{"op": "remove", "id": file_id, "old": heads.pop(file_id), "new": None,
                                "sha256": None, "size": None}]
                elif writer == BATCH_WRITER:
                    entries = _store_batch(store, rng, pool, heads)
                else:
                    data = content(rng, pool)
                    src.write_bytes(data)
                    store.put(src, file_id)
                    entries = [_stored(file_id, data, heads, str(store.stat(file_id).version))]
            except CasstorError as err:  # the soak allows none: logged, then the writer stops (exit 1)
                _log(log, [{"op": "failed", "id": file_id, "old": heads.get(file_id), "new": None, "sha256": None,
                            "size": None, "error": str(err)}], start)
                raise SystemExit(f"casstor: {err}") from None
            _log(log, entries, start)
            time.sleep(PAUSE_S)
    session.cluster.shutdown()


def _store_batch(store: Store, rng: random.Random, pool: list[bytes], heads: dict[str, str]) -> list[dict]:
    """2 to 4 of the writer's files stored as one batch; a file the batch failed raises as a lone store would."""
    ids = [f"soak/w{BATCH_WRITER}/f{n}" for n in rng.sample(range(FILES_PER_WRITER), rng.randint(2, 4))]
    datas = [content(rng, pool, BATCH_SEGMENTS) for _ in ids]
    results = store.put_many([SmallFile(file_id, data) for file_id, data in zip(ids, datas)])
    for result in results:
        if isinstance(result, Exception):
            raise result if isinstance(result, CasstorError) else CasstorError(f"a batch failed a file: {result}")
    return [_stored(file_id, data, heads, str(result.version)) for file_id, data, result in zip(ids, datas, results)]


def _stored(file_id: str, data: bytes, heads: dict[str, str], version: str) -> dict:
    """The ledger's entry of one store (its head noted as the writer's)."""
    old, heads[file_id] = heads.get(file_id), version
    return {"op": "store" if old is None else "overwrite", "id": file_id, "old": old, "new": version,
            "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _log(log, entries: list[dict], start: float) -> None:
    """One line an operation (each file of a batch), once it returned: its start and end are the call's."""
    end = time.time()
    for entry in entries:
        log.write(json.dumps({**entry, "start": start, "end": end}) + "\n")
    log.flush()


if __name__ == "__main__":
    run(int(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3]))
