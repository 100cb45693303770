"""The upgrade to schema 5: schema 4's heads (``files``, one row an ID) become versions and directory entries.

Each head of ``files`` is copied as the one version of its ID, stamped with
its version's time, and its entry written, exactly as a store writes them.
The copy is idempotent (the same rows, the same timestamps), so an upgrade
killed at any point is completed by running ``casstor init`` again: the
settings' ``schema_version`` is written after the copy, and until then this
casstor refuses the store. The table ``files`` is left as it was (an older
casstor's last state; nothing reads it after the upgrade).

Writers of schema 4 keep writing ``files`` while the store reads as schema 4,
so the whole upgrade, from the copy's first read to the ``schema_version``
write, runs inside :func:`upgrade_window`: the offline maintenance window
(which schema-4 writers honour: they refuse to start), entered only once the
writers already running have finished. A head a copy has passed can then not
change under it. An upgrade killed with -9 leaves the window open (older
writers stay stopped); the re-run takes it over once its heartbeat has lapsed
(``CASSTOR_LEASE_TTL_S``, 60 s by default) and copies again.

Stores of schema 2 and 3 gain schema 4's columns first, as before.

The copy reads ``files`` by slices of the token ring (:class:`TokenSlice`):
``casstor init`` copies the whole ring in its own process, ``casstor
upgrade`` (:mod:`casstor_ops.ops.upgrade`) hands the slices to Spark tasks
for a store too large for one client; either is passed to ``init_store`` as
its :data:`HeadCopier`, inside the same window.

Example::

    >>> with upgrade_window(session, log=print) as window:     # doctest: +SKIP
    ...     copy_heads(session, settings.directory_rows, log=print)
    ...     window.fence("recording schema 5")
    upgrade: 10000 heads copied (2211 a second)
    upgrade: 12034 heads copied to versions and the directory index in 5.6 s

Failures: the driver's errors propagate, and MaintenanceError (exit 5, one
line) when another window is open or writers still run after
``SAFETY.writers_timeout_s``; nothing is lost (the source rows are only read).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from cassandra.cluster import Session

from casstor_ops.store.coordination.leases import wait_for_writers
from casstor_ops.store.coordination.reclaim_window import UpgradeWindow, WindowState
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.row_requests import write_all
from casstor_ops.store.cql.statements import Query, Statements
from casstor_ops.store.namespace.entries import Namespace, version_micros
from casstor_ops.store.records import FileAttributes, VersionRow

COPY_PAGE_ROWS = 500
PUBLISH_THREADS = 8     # entries are written by Namespace.publish, one request (and a cached generation) each
PROGRESS_HEADS = 10_000  # a progress line per this many heads copied

# Murmur3's ring: a partition's token t is MIN_TOKEN < t <= MAX_TOKEN (it never hashes a key to MIN_TOKEN).
MIN_TOKEN, MAX_TOKEN = -2**63, 2**63 - 1

# Columns schema 2 and 3 lacked (they are what the schema-4 read selects).
SCHEMA_4_COLUMNS = [f"ALTER TABLE {META_KS}.files ADD IF NOT EXISTS (mode int, mtime_ns bigint)",
                    f"ALTER TABLE {META_KS}.files ADD IF NOT EXISTS (content blob, codec text, stored_size int)"]


@contextmanager
def upgrade_window(session: Session, log: Callable[[str], None] = lambda msg: None) -> Iterator[UpgradeWindow]:
    """Hold the offline window for an upgrade, once the running writers have finished (see the module docstring)."""
    with UpgradeWindow(session) as window:
        if window.resumed is not None:
            log(f"upgrade: resuming the upgrade killed in the {window.resumed.describe()}")
        window.set_state(WindowState.WAITING_FOR_WRITERS)
        wait_for_writers(session, SAFETY.writers_timeout_s, log=lambda msg: log(f"upgrade: {msg}"))
        window.set_state(WindowState.UPGRADING)
        yield window


@dataclass(frozen=True)
class TokenSlice:
    """The heads whose partition token t is ``lo < t <= hi``: a Spark task's share of the copy.

    Example: ``TokenSlice.split(4)`` -> four slices, the first from ``MIN_TOKEN``, the last to ``MAX_TOKEN``, each
    starting where the one before ended (every head in exactly one). Failures: ``n < 1`` raises ValueError.
    """

    lo: int = MIN_TOKEN
    hi: int = MAX_TOKEN

    @staticmethod
    def split(n: int) -> list["TokenSlice"]:
        if n < 1:
            raise ValueError(f"cannot split the ring into {n} slices")
        bounds = [MIN_TOKEN + (MAX_TOKEN - MIN_TOKEN) * i // n for i in range(n + 1)]
        return [TokenSlice(lo, hi) for lo, hi in zip(bounds, bounds[1:])]


# How an upgrade copies the heads: (session, directory_rows, log) -> heads copied. copy_heads, or a Spark job's.
HeadCopier = Callable[[Session, int, Callable[[str], None]], int]


def copy_heads(session: Session, directory_rows: int, log: Callable[[str], None] = lambda msg: None,
               ring: TokenSlice = TokenSlice()) -> int:
    """Copy every head of ``files`` in ``ring`` (all of them by default) into ``versions`` and the directory index;
    the number copied."""
    st = Statements.for_session(session)
    namespace = Namespace.for_session(session, directory_rows)
    bound = st.schema4_heads.bind((ring.lo, ring.hi))
    bound.fetch_size = COPY_PAGE_ROWS
    result = session.execute(bound, execution_profile=st.named_rows)
    copied, started = 0, time.monotonic()
    with ThreadPoolExecutor(PUBLISH_THREADS, thread_name_prefix="casstor-upgrade") as pool:
        while True:
            rows = list(result.current_rows)
            _copy_page(session, st, namespace, pool, rows)
            if (copied + len(rows)) // PROGRESS_HEADS > copied // PROGRESS_HEADS:
                log(f"upgrade: {copied + len(rows)} heads copied "
                    f"({(copied + len(rows)) / (time.monotonic() - started):.0f} a second)")
            copied += len(rows)
            if not result.has_more_pages:
                break
            result.fetch_next_page()
    log(f"upgrade: {copied} heads copied to versions and the directory index in {time.monotonic() - started:.1f} s")
    return copied


def _copy_page(session: Session, st: Statements, namespace: Namespace, pool: ThreadPoolExecutor,
               rows: list) -> None:
    """A page's versions, then their entries (an entry never names a version that is not there)."""
    # Schema 4 recorded no inode or ctime (None, None): a re-run of a tree store reads such files once.
    versions = [VersionRow(r.id, r.version, r.size, r.hash, r.blocks, r.committed_at, *_attributes(r), ino=None,
                           ctime_ns=None, content=r.content, codec=r.codec, stored_size=r.stored_size, deleted=False,
                           lone_block=None, written_at=version_micros(r.version)) for r in rows]
    write_all(session, [Query(st.insert_version, version) for version in versions])
    heads = [(v.head(FileAttributes(v.mode, v.mtime_ns) if v.mode is not None else None), v.stored_size)
             for v in versions]
    for _ in pool.map(lambda head: namespace.publish(*head), heads):  # raises the first failure
        pass


def _attributes(row) -> tuple:
    """Mode and mtime when written with this version (a casstor older than the columns rewrote a head without
    them: cells older than the head belong to a previous version)."""
    if row.mode is not None and row.attributes_written == row.head_written:
        return row.mode, row.mtime_ns
    return None, None
