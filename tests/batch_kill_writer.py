"""`casstor store DIR PREFIX` that kills itself (SIGKILL) inside a batch's commit, between its two write steps.

Run as ``python -m tests.batch_kill_writer N DIR PREFIX`` (from the project
root, with the test node's ``CASSTOR_*`` environment): the store of the tree
runs as the CLI runs it, one worker, and the N-th batch of small files
(:class:`~casstor_ops.store.engine.batch_upload.BatchUpload`) to finish the first of
its two commit writes (block lists, heads) SIGKILLs the process right after
that write is acknowledged, before the other one is sent. With the commit
order, that is after its block lists and before its heads.
"""

from __future__ import annotations

import os
import signal
import sys

from casstor_ops.cli.main import main
from casstor_ops.store.engine.batch_upload import BatchUpload

finished = {"batches": 0}


def kill_after_first_step(step):
    def wrapped(self, *args):
        result = step(self, *args)
        if not getattr(self, "_a_step_done", False):
            self._a_step_done = True
            finished["batches"] += 1
            if finished["batches"] == int(sys.argv[1]):
                os.kill(os.getpid(), signal.SIGKILL)
        return result
    return wrapped


if __name__ == "__main__":
    BatchUpload._write_lists = kill_after_first_step(BatchUpload._write_lists)
    BatchUpload._write_heads = kill_after_first_step(BatchUpload._write_heads)
    sys.exit(main(["store", sys.argv[2], sys.argv[3], "--quiet", "--workers", "1"]))
