"""Seams: the blocks around where an object's parts meet, cut again as one store of the whole object cuts them.

Vocabulary:

* A *part* (an S3 upload's part, or a copied source) was chunked on its own,
  so its last block ends where the part ends and the next part's first block
  starts there: cuts that a store of the whole object would not make.
* A *seam* is such a byte offset, where one part ends and the next begins.
* A *run* re-cuts the object's bytes from the start of the block that ends at
  a seam, a block at a time, until one of its cuts past the seam is also a cut
  of the parts' blocks. FastCDC cuts each block from the end of the one before
  only, so from that cut on the parts' blocks are the whole object's (until the
  next seam), and the run's start was one of the whole object's cuts for the
  same reason (the run before it ended on one; the object's start is one).

So an object completed from parts has the blocks a single PUT or ``casstor
store`` of its bytes has, whatever its part size: re-uploading it with other
parts, or storing it another way, finds every block of its list. A run reads
~780 KiB a seam and cuts ~2.2 blocks (FastCDC at the default 64/192/1024 KiB,
160 MiB of random bytes in parts of 5 and 8 MiB); the parts' own seam blocks
are left to reclaim with the parts.

A Complete of thousands of parts could take longer than a client waits for
its answer, so the seams are cut again for ``budget_s`` at most: the seams
after it keep the parts' cuts (the object is the same bytes either way; only
its blocks near those seams depend on its part size).

The blocks come in order, as an iterator: a block a run cut carries its
content, a part's block kept as it was does not. Seams are read
:data:`SEAMS_AT_ONCE` at a time, so what is held is bounded whatever the
number of parts (a Complete of 10,000); a block a run cut can be cut again
later (:meth:`Recut.content`), for a commit that finds it gone.

Example::

    >>> cut = Recut(hashes, sizes, seams_of(part_sizes), settings, read)   # doctest: +SKIP
    >>> [(block.digest, block.size, block.content) for block in cut]      # doctest: +SKIP

Failures: ``read``'s errors propagate (a block that vanished, a damaged one);
nothing is written here.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass

from casstor_ops.store.blocks.chunking import ChunkSizes, make_chunker
from casstor_ops.store.blocks.hashing import block_hash

# Blocks asked for at once a seam: the block that ends at it and the three after it. A run that needs more asks for
# them as it goes, a round trip each: 0.43 such reads a seam with 3, 0.17 with 4, 0.08 with 5 (320 MiB of random
# bytes in 5 MiB parts, the default sizes), for 4.3, 4.7 and 5.4 blocks read a seam.
READ_AHEAD = 4
# Seams whose first blocks are read together: 16 x 4 blocks of 192 KiB on average, ~12 MiB, and the next group's
# are read while this one's runs cut: ~24 MiB held (128 MiB at most, blocks of chunk_max).
SEAMS_AT_ONCE = 16
# Runs remembered by the blocks they read (a few hashes and cuts each), for parts that repeat.
REMEMBERED_RUNS = 1024

BlockReader = Callable[[list[bytes]], Callable[[], dict[bytes, bytes]]]
"""Sends the reads of the distinct blocks named; what it answers waits for them and gives their checked plaintexts
by hash, or raises for one that is missing."""


@dataclass(frozen=True)
class Cut:
    """A block of the object, in order: one a run cut (its ``content`` with it) or a part's as it was (None)."""

    digest: bytes
    size: int
    content: bytes | None = None


class Recut:
    """The blocks of parts' lists ``hashes`` (of ``sizes``) end to end, cut again around ``seams`` (byte offsets
    where a part ends, each a block boundary) as one file's; iterate for them, in order."""

    def __init__(self, hashes: list[bytes], sizes: list[int], seams: Iterable[int], settings: ChunkSizes,
                 read: BlockReader, budget_s: float = math.inf) -> None:
        self._budget_s = budget_s  # seams are cut again for this long from the first; the rest keep the parts' cuts
        self._hashes = hashes
        self._sizes = sizes
        self._settings = settings
        self._read = read
        self._starts = list(itertools.accumulate(sizes, initial=0))  # one more than the blocks: the end
        self._index = {offset: i for i, offset in enumerate(self._starts)}
        self._seams = sorted(s for s in set(seams) if 0 < s < self._starts[-1])
        self._held: dict[bytes, bytes] = {}  # the parts' blocks read for the seams at hand
        self._runs: dict[bytes, int] = {}  # a block a run cut -> the seam (its index) whose run cut it first
        self._done: dict[bytes, list[tuple[tuple[bytes, ...], list[Cut]]]] = {}  # a run's first block -> runs
        self.read_bytes = 0  # the parts' bytes the runs read

    def __iter__(self) -> Iterator[Cut]:
        i = 0  # the next block of the parts' lists; it starts at one of the whole object's cuts
        ahead = None
        until = time.monotonic() + self._budget_s
        for n, seam in enumerate(self._seams):
            if time.monotonic() >= until:
                break
            if n % SEAMS_AT_ONCE == 0:  # the next group's reads go while this one's runs cut
                self._held = (ahead or self._group_reads(n))()
                ahead = self._group_reads(n + SEAMS_AT_ONCE)
            if self._starts[i] >= seam:
                continue  # a run went past this seam
            last = self._index[seam] - 1
            yield from map(Cut, self._hashes[i:last], self._sizes[i:last])
            i = yield from self._run_or_again(last, n)
        yield from map(Cut, self._hashes[i:], self._sizes[i:])

    def content(self, digest: bytes) -> bytes | None:
        """The content of ``digest`` if a run cut it, cut again (its parts' blocks read again); None for a part's
        block (its content is not the object's to give: the part's bytes are gone)."""
        n = self._runs.get(digest)
        if n is None:
            return None
        return next(cut.content for cut in self._run(self._index[self._seams[n]] - 1, n) if cut.digest == digest)

    def _group_reads(self, n: int) -> Callable[[], dict[bytes, bytes]]:
        """The reads, sent now, of the first blocks of the runs at seams ``n`` to ``n + SEAMS_AT_ONCE``."""
        return self._send(self._index[s] - 1 + k for s in self._seams[n:n + SEAMS_AT_ONCE] for k in range(READ_AHEAD))

    def _send(self, indices: Iterable[int]) -> Callable[[], dict[bytes, bytes]]:
        wanted = list(dict.fromkeys(self._hashes[i] for i in indices if i < len(self._hashes)))
        return self._read(wanted) if wanted else dict

    def _fetch(self, indices: Iterable[int]) -> None:
        """Read now the blocks of ``indices`` not held (a run past its group's first blocks: a round trip)."""
        wanted = (i for i in indices if self._hashes[i:i + 1] and self._hashes[i] not in self._held)
        self._held.update(self._send(wanted)())

    def _taken(self, i: int) -> bytes:
        """Block ``i``'s content, no longer held: runs go forward, so a block is taken once (but for
        :meth:`content`, which reads again), and a run that goes on for long holds no more than its last block."""
        if self._hashes[i] not in self._held:
            self._fetch(range(i, i + READ_AHEAD))
        return self._held.pop(self._hashes[i])

    def _run_or_again(self, first: int, n: int) -> Generator[Cut, None, int]:
        """:meth:`_run`, or the blocks of a run that read the same blocks before: a run's cuts depend on the bytes
        up to where it ends only, so an object of repeated parts (zeros, one body sent as every part) reads one
        seam. A block given again comes without its content (it was given with it the first time)."""
        for read, cuts in self._done.get(self._hashes[first], ()):
            if tuple(self._hashes[first:first + len(read)]) == read:
                for cut in cuts:
                    self._runs.setdefault(cut.digest, n)
                yield from cuts
                return first + len(read)
        cuts: list[Cut] = []
        after = yield from self._run(first, n, cuts)
        if after < len(self._hashes) and len(self._done) < REMEMBERED_RUNS:  # the object's end cuts by itself
            self._done.setdefault(self._hashes[first], []).append((tuple(self._hashes[first:after]), cuts))
        return after

    def _run(self, first: int, n: int, record: list[Cut] | None = None) -> Generator[Cut, None, int]:
        """The blocks of the bytes from the parts' block ``first`` on, cut as one file, until a cut past seam ``n``
        is one of the parts' cuts; the index of the parts' block that starts there. ``record`` gets each block cut,
        without its content."""
        seam = self._seams[n]
        cdc = make_chunker(self._settings)
        pending = b""  # the bytes read and not yet cut, from `cut_at` past block `first`'s start
        cut_at = 0
        base = self._starts[first]
        k = first
        while True:
            content = self._taken(k)
            self.read_bytes += len(content)
            pending += content
            k += 1
            ended = k == len(self._hashes)
            done = 0
            for chunk in cdc.cut_buf(pending):
                if not ended and chunk.offset + chunk.length == len(pending):
                    break  # cut by the end of what was read, not by content
                data = bytes(chunk.data)
                done = chunk.offset + chunk.length
                digest = block_hash(data)
                self._runs.setdefault(digest, n)
                if record is not None:
                    record.append(Cut(digest, len(data)))
                yield Cut(digest, len(data), data)
                end = base + cut_at + done
                if end > seam and end in self._index:
                    return self._index[end]
            pending = pending[done:]
            cut_at += done


def seams_of(part_sizes: Iterable[int]) -> list[int]:
    """The offsets where parts of ``part_sizes`` meet. Example: ``seams_of([5, 5, 2])`` is ``[5, 10]``."""
    return list(itertools.accumulate(part_sizes))[:-1]
