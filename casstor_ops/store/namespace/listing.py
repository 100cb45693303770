"""Reading the directory index: a directory's entries in name order, and the files under a prefix.

A directory is read from its buckets only (one partition until it splits:
:mod:`.layout`), each paged by the driver (``PAGE_ROWS`` a request), merged
by name; a name found in two generations' buckets (stored again after a
split) is the entry of its newest version. Entries of removed files (delete
markers) are skipped, unless ``include_deleted`` (a point-in-time walk: a
file removed after that time was there then). A prefix ``photos/20`` is the names from ``20`` of the
directory ``photos/``; every subdirectory marker met is walked in turn, which
yields files in ID order. So ``ls photos/2024/`` costs the requests of what is
under it, whatever the store holds.
A walk may read ahead (``ahead``: ``Store.list`` does): the subdirectories
among a directory's next entries are opened on threads of the walk, their
generations in one request, while it yields what comes before them.
A caller that knows many directories it will need (a tree store's
read-ahead) reads the unsplit ones among them in one request
(:func:`unsplit_entries`); a caller that holds every file under a prefix
anyway (a tree restore) reads them level by level so (:func:`all_files_under`).

The generation is read fresh for each directory listed (not the writers'
cache): a listing must read every bucket a split may have started filling.
Every bucket's first request is sent at once. A caller that takes one page
of a split directory (an S3 listing, ``max-keys``) says so (``page``): each
bucket is then read a share of the page a request, not a page each (measured
on a flat directory of 400,000 names in 127 buckets, 1,000-name pages: 280 s
to list it with a page a bucket, 127 times the rows it returned).

Example::

    >>> [f.id for f in files_under(session, st, "photos/")]                   # doctest: +SKIP
    ['photos/2024/a.jpg', 'photos/b.jpg']
    >>> [e.name for e in directory_entries(session, st, "photos/")]           # doctest: +SKIP
    ['2024/', 'b.jpg']

Failures: the driver's errors propagate.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from operator import attrgetter

from cassandra.cluster import Session

from casstor_ops.store.blocks.block_list import file_hash_of
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.namespace.layout import buckets, directory_key, split_id
from casstor_ops.store.records import FileAttributes, FileInfo

PAGE_ROWS = 1000
# Unsplit directories read in one request (unsplit_entries): 8, 16, 32 and 64 a request read the 790 directories of
# bench.small_files's tree in 0.07-0.13, 0.05-0.06, 0.04-0.06 and 0.04-0.06 s; one a request on 16 threads, 0.44 s
# (client 0.32 s, node 0.28 s of CPU, against 0.03 s and 0.05 s at 32).
UNSPLIT_A_READ = 32
# Requests of one level that all_files_under keeps in flight.
LEVEL_READS = 8
# A walk that reads ahead (Store.list, an S3 listing) reads the subdirectories among a directory's next entries
# ahead, this many on as many threads. One at a time, two round trips each (its generation, then its entries),
# listing the 5,626 files in 1,230 directories of bench.small_files took 2.1-2.2 s on a warm node; 16 ahead
# 1.5-1.65 s (8: 1.57, 32: 1.64). A tree restore and `casstor ls`, which hold the whole listing anyway, read it level
# by level instead, many directories a request (Store.list_all: 0.13-0.15 s for that tree, against 1.20-1.29 s
# walked).
WALK_AHEAD = 16
# A bucket's rows a request when a page is shared among buckets: twice its share of the page (names hash evenly
# over the buckets, so one request a bucket nearly always covers the page), and no fewer than this.
MIN_BUCKET_ROWS = 32


@dataclass(frozen=True)
class Entry:
    """One name of a directory: a file's newest version (``file``), or a subdirectory (``file`` None, the name
    ends in ``/``). ``stored_size`` is an inline file's content as kept (None otherwise). ``deleted``: its newest
    version is a delete marker (listed with ``include_deleted`` only)."""

    name: str
    file: FileInfo | None
    stored_size: int | None = None
    deleted: bool = False

    @property
    def is_directory(self) -> bool:
        return self.file is None


def recorded_generation(session: Session, st: Statements, directory: str) -> int | None:
    """The directory's generation as recorded now (0 for one not split), None when it has no row (not made)."""
    # Plain tuples: the default factory builds a namedtuple class for every result, a directory's each here.
    row = session.execute(st.directory_generation, (directory_key(directory),),
                          execution_profile=st.plain_rows).one()
    return None if row is None else row[0] or 0


def recorded_generations(session: Session, st: Statements, directories: Sequence[str]) -> dict[str, int | None]:
    """Each directory's generation as recorded now (None: it has no row, not made), in one request: for a few
    directories at once (a walk's look-ahead, a tree store's read-ahead), not thousands."""
    rows = session.execute(st.directory_generations, ([directory_key(d) for d in directories],),
                           execution_profile=st.plain_rows)
    recorded = {key: generation or 0 for key, generation in rows}
    return {d: recorded.get(directory_key(d)) for d in directories}


def directory_entries(session: Session, st: Statements, directory: str, start: str = "",
                      include_deleted: bool = False, page: int | None = None,
                      generation: int | None = None) -> Iterator[Entry]:
    """The live entries of ``directory`` whose names are ``start`` or later, in name order; ``include_deleted``:
    removed files' entries too; ``page``: the entries the caller will take at most (None: all of them);
    ``generation``: the directory's, as the caller has just read it (None: read here)."""
    if generation is None:
        generation = recorded_generation(session, st, directory) or 0
    ids = buckets(generation)
    fetch = PAGE_ROWS if page is None or len(ids) == 1 else max(MIN_BUCKET_ROWS, 2 * page // len(ids))
    streams = [_bucket_rows(session, st, directory, bucket, start, fetch) for bucket in ids]
    rows = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=lambda r: r.name)
    for name, same in itertools.groupby(rows, key=lambda r: r.name):
        newest = max(same, key=lambda r: (r.version is not None, r.version.time if r.version else 0))
        entry = _entry(directory, newest, include_deleted)
        if entry is not None:
            yield entry


def unsplit_entries(session: Session, st: Statements, directories: Sequence[str]) -> dict[str, list[Entry]]:
    """The live entries of each of ``directories`` in name order, in one request (paged by the driver): for
    directories the caller has just found unsplit (generation 0: bucket 0 holds every entry), a few dozen at once.

    Example: ``unsplit_entries(session, st, ["a/", "b/"])["a/"][0].name`` -> ``'x.txt'``. Failures: the
    driver's errors propagate."""
    keys = {directory_key(d): d for d in directories}
    bound = st.unsplit_entries.bind((list(keys),))
    bound.fetch_size = PAGE_ROWS
    found: dict[str, list[Entry]] = {d: [] for d in directories}
    for row in session.execute(bound, execution_profile=st.named_rows):
        directory = keys[row.dir]
        entry = _entry(directory, row, include_deleted=False)
        if entry is not None:
            found[directory].append(entry)
    return found


def all_files_under(session: Session, st: Statements, prefix: str = "") -> list[FileInfo]:
    """The files whose ID starts with ``prefix``, in ID order, as one list: read level by level, each level's
    directories ``UNSPLIT_A_READ`` a request (their generations, then the unsplit ones' entries), ``LEVEL_READS``
    requests at once. For a caller that holds the whole list anyway (a tree restore): :func:`files_under` streams
    in bounded memory, but waits on each directory's reads in turn.

    Example: ``[f.id for f in all_files_under(session, st, "photos/")]`` -> ``['photos/2024/a.jpg',
    'photos/b.jpg']``. Failures: the driver's errors propagate."""
    # ID order is the walk's order: a directory's names sort as the IDs they start (a marker's "/" included).
    directory, start = split_id(prefix)
    top = itertools.takewhile(lambda e: e.name.startswith(start), directory_entries(session, st, directory, start))
    found, level = _split_level(directory, top)
    with ThreadPoolExecutor(LEVEL_READS, thread_name_prefix="casstor-level") as reads:
        while level:
            chunks = [level[n:n + UNSPLIT_A_READ] for n in range(0, len(level), UNSPLIT_A_READ)]
            next_level: list[str] = []
            for listed in reads.map(lambda chunk: live_entries(session, st, recorded_generations(session, st, chunk)),
                                    chunks):
                for below, entries in listed.items():
                    files, subdirectories = _split_level(below, entries)
                    found += files
                    next_level += subdirectories
            level = next_level
    found.sort(key=attrgetter("id"))
    return found


def live_entries(session: Session, st: Statements, generations: dict[str, int | None]) -> dict[str, list[Entry]]:
    """The live entries of each directory of ``generations`` (its generation as just read; None: not made, so no
    entry), in name order: the unsplit ones in one request (:func:`unsplit_entries`; at most ``UNSPLIT_A_READ``
    of them, the caller's share), a split one from its buckets.

    Example: ``live_entries(session, st, {"a/": 0, "new/": None})`` -> ``{'a/': [Entry('x.txt', ...)], 'new/':
    []}``. Failures: the driver's errors propagate."""
    unsplit = [d for d, generation in generations.items() if generation == 0]
    found = unsplit_entries(session, st, unsplit) if unsplit else {}
    for directory, generation in generations.items():
        if directory not in found:
            found[directory] = [] if generation is None else \
                list(directory_entries(session, st, directory, generation=generation))
    return found


def _split_level(directory: str, entries: Iterable[Entry]) -> tuple[list[FileInfo], list[str]]:
    """The files among ``directory``'s ``entries``, and its subdirectories."""
    files, subdirectories = [], []
    for entry in entries:
        if entry.is_directory:
            subdirectories.append(directory + entry.name)
        else:
            files.append(entry.file)
    return files, subdirectories


def _entry(directory: str, row, include_deleted: bool) -> Entry | None:
    """The entry of a name's newest row (None: a removed file's, unless ``include_deleted``)."""
    if row.version is None:
        return Entry(row.name, None)
    if include_deleted or not row.deleted:
        return Entry(row.name, _file(directory + row.name, row), row.stored_size, bool(row.deleted))
    return None


def _bucket_rows(session: Session, st: Statements, directory: str, bucket: int, start: str,
                 fetch: int) -> Iterator:
    bound = st.directory_entries.bind((directory_key(directory), bucket, start))
    bound.fetch_size = fetch
    future = session.execute_async(bound, execution_profile=st.named_rows)  # sent now, before the merge asks
    return _rows(future)


def _rows(future) -> Iterator:
    # A generator, not the ResultSet: iter() of a ResultSet rewinds its page, and heapq.merge calls it on the last
    # stream left (yield from it.__self__), which listed that bucket's rows again (tests/test_directory_split.py).
    yield from future.result()


def _file(file_id: str, row) -> FileInfo:
    attributes = FileAttributes(row.mode, row.mtime_ns, row.ino, row.ctime_ns) if row.mode is not None else None
    return FileInfo(file_id, row.version, row.size, file_hash_of(row), row.blocks, row.committed_at, attributes,
                    lone_block=row.lone_block)


def entries_under(session: Session, st: Statements, prefix: str = "", include_deleted: bool = False,
                  ahead: int = 0, after: str = "", page: int | None = None) -> Iterator[Entry]:
    """Every file entry whose ID starts with ``prefix``, in ID order (names are whole IDs here); ``include_deleted``:
    removed files' entries too; ``ahead``: how many of a directory's next entries the walk looks at before it
    takes the first, each subdirectory among them read then on threads of its own (0: each directory read when the
    walk gets to it: what a caller wants that takes the first entry only); ``after``: only the files whose ID sorts
    after it (an S3 listing's token: each directory on its path is read from that path's name on, the names
    before it skipped unread); ``page``: the entries the caller takes at most (:func:`directory_entries`')."""
    directory, start = split_id(prefix)
    reads = ThreadPoolExecutor(ahead, thread_name_prefix="casstor-walk") if ahead else None
    walk = _Walk(session, st, include_deleted, after, page, reads, ahead)
    try:
        yield from walk.files(directory, walk.entries(directory, start), start)
    finally:
        if reads is not None:
            reads.shutdown(wait=False, cancel_futures=True)


@dataclass
class _Walk:
    """One walk of :func:`entries_under`: what it reads, and its threads (None: each directory read when reached)."""

    session: Session
    st: Statements
    include_deleted: bool
    after: str
    page: int | None
    reads: ThreadPoolExecutor | None
    ahead: int

    def entries(self, directory: str, start: str, generation: int | None = None) -> Iterator[Entry]:
        """``directory``'s entries from ``start``, or from the name on ``after``'s path when that comes later."""
        if self.after.startswith(directory):
            rest = self.after[len(directory):]
            start = max(start, rest[:rest.find("/") + 1] if "/" in rest else rest)
        return directory_entries(self.session, self.st, directory, start, self.include_deleted, page=self.page,
                                 generation=generation)

    def files(self, directory: str, entries: Iterator[Entry], start: str) -> Iterator[Entry]:
        """The file entries of ``directory`` (its ``entries``, names from ``start``) and of the subdirectories among
        them, depth first; with ``reads``, up to ``ahead`` entries taken early and their subdirectories opened
        (their generations in one request)."""
        waiting: deque[tuple[Entry, Future | None]] = deque()
        entries = itertools.takewhile(lambda e: e.name.startswith(start), entries)
        while True:
            room = (self.ahead if self.reads is not None else 1) - len(waiting)
            taken = list(itertools.islice(entries, max(room, 0)))
            subdirectories = [directory + e.name for e in taken if e.is_directory]
            if self.reads is not None and subdirectories:
                generations = self.reads.submit(recorded_generations, self.session, self.st, subdirectories)
                waiting.extend((e, self.reads.submit(self._opened, directory + e.name, generations)
                                if e.is_directory else None) for e in taken)
            else:
                waiting.extend((e, None) for e in taken)
            if not waiting:
                return
            entry, opened = waiting.popleft()
            if not entry.is_directory:
                if entry.file.id > self.after:
                    yield entry
                continue
            below = directory + entry.name
            yield from self.files(below, opened.result() if opened is not None else self.entries(below, ""), "")

    def _opened(self, directory: str, generations: Future) -> Iterator[Entry]:
        """``directory``'s entries with each bucket's first page read now (on a walk's thread), its generation once
        ``generations`` has it (submitted first: it runs, or ran, on another of the walk's threads)."""
        entries = self.entries(directory, "", generations.result()[directory] or 0)
        first = next(entries, None)
        return iter(()) if first is None else itertools.chain([first], entries)


def files_under(session: Session, st: Statements, prefix: str = "", ahead: int = 0) -> Iterator[FileInfo]:
    """The files whose ID starts with ``prefix``, in ID order, read from the directories under it only (``ahead``:
    as :func:`entries_under`'s)."""
    for entry in entries_under(session, st, prefix, ahead=ahead):
        yield entry.file
