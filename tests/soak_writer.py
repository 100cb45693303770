"""One soak writer: stores, overwrites and removes files of its own until a deadline, logging each to a ledger.

Run as ``python -m tests.soak_writer WRITER SECONDS LEDGER`` (from the
project root, with the test node's ``CASSTOR_*`` environment). Its files are
``soak/w<WRITER>/f<n>``; their content is a random sequence of segments of
a pool every writer shares (so blocks are shared across files and writers)
plus one fresh segment (so overwritten and removed files leave garbage).

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
from casstor_ops.store.api import Store

POOL_SEGMENTS = 32
SEGMENT = 256 << 10   # ~5 chunks: the inner ones are shared by every file that has the segment
FRESH_MAX = 64 << 10
FILES_PER_WRITER = 8
REMOVE_CHANCE = 0.25
PAUSE_S = 0.25        # between operations: the soak's garbage must stay within what reclaim and verify keep up with


def shared_pool() -> list[bytes]:
    pool = random.Random(1414)
    return [pool.randbytes(SEGMENT) for _ in range(POOL_SEGMENTS)]


def content(rng: random.Random, pool: list[bytes]) -> bytes:
    return b"".join(rng.choices(pool, k=rng.randint(1, 4))) + rng.randbytes(rng.randint(1, FRESH_MAX))


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
            old = heads.get(file_id)
            entry = {"id": file_id, "old": old, "new": None, "sha256": None, "size": None, "start": time.time()}
            try:
                if old is not None and rng.random() < REMOVE_CHANCE:
                    store.remove(file_id)
                    del heads[file_id]
                    entry["op"] = "remove"
                else:
                    data = content(rng, pool)
                    src.write_bytes(data)
                    entry.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
                    store.put(src, file_id)
                    heads[file_id] = entry["new"] = str(store.stat(file_id).version)
                    entry["op"] = "store" if old is None else "overwrite"
            except CasstorError as err:  # the soak allows none: logged, then the writer stops (exit 1)
                entry.update(op="failed", error=str(err), end=time.time())
                log.write(json.dumps(entry) + "\n")
                raise SystemExit(f"casstor: {err}") from None
            entry["end"] = time.time()
            log.write(json.dumps(entry) + "\n")
            log.flush()
            time.sleep(PAUSE_S)
    session.cluster.shutdown()


if __name__ == "__main__":
    run(int(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3]))
