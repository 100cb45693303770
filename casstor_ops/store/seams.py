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
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass

from casstor_ops.store.chunking import make_chunker
from casstor_ops.store.hashing import block_hash
from casstor_ops.store.schema import StoreSettings

# Blocks asked for at once a seam: the block that ends at it and the two after it, which most runs need (~2.2
# blocks cut a run); a run that needs more asks for them as it goes.
READ_AHEAD = 3
# Seams whose first blocks are read together: 16 x 3 blocks of 192 KiB on average, ~9 MiB held (48 MiB at most).
SEAMS_AT_ONCE = 16

BlockReader = Callable[[list[bytes]], dict[bytes, bytes]]
"""Reads the distinct blocks named and answers their checked plaintexts by hash; raises for one that is missing."""


@dataclass(frozen=True)
class Cut:
    """A block of the object, in order: one a run cut (its ``content`` with it) or a part's as it was (None)."""

    digest: bytes
    size: int
    content: bytes | None = None


class Recut:
    """The blocks of parts' lists ``hashes`` (of ``sizes``) end to end, cut again around ``seams`` (byte offsets
    where a part ends, each a block boundary) as one file's; iterate for them, in order."""

    def __init__(self, hashes: list[bytes], sizes: list[int], seams: Iterable[int], settings: StoreSettings,
                 read: BlockReader) -> None:
        self._hashes = hashes
        self._sizes = sizes
        self._settings = settings
        self._read = read
        self._starts = list(itertools.accumulate(sizes, initial=0))  # one more than the blocks: the end
        self._index = {offset: i for i, offset in enumerate(self._starts)}
        self._seams = sorted(s for s in set(seams) if 0 < s < self._starts[-1])
        self._held: dict[bytes, bytes] = {}  # the parts' blocks read for the seams at hand
        self._runs: dict[bytes, int] = {}  # a block a run cut -> the seam (its index) whose run cut it
        self.read_bytes = 0  # the parts' bytes the runs read

    def __iter__(self) -> Iterator[Cut]:
        i = 0  # the next block of the parts' lists; it starts at one of the whole object's cuts
        for n, seam in enumerate(self._seams):
            if n % SEAMS_AT_ONCE == 0:
                self._held = {}
                self._fetch(self._index[s] - 1 + k for s in self._seams[n:n + SEAMS_AT_ONCE] for k in range(READ_AHEAD))
            if self._starts[i] >= seam:
                continue  # a run went past this seam
            last = self._index[seam] - 1
            yield from map(Cut, self._hashes[i:last], self._sizes[i:last])
            i = yield from self._run(last, n)
        yield from map(Cut, self._hashes[i:], self._sizes[i:])

    def content(self, digest: bytes) -> bytes | None:
        """The content of ``digest`` if a run cut it, cut again (its parts' blocks read again); None for a part's
        block (its content is not the object's to give: the part's bytes are gone)."""
        n = self._runs.get(digest)
        if n is None:
            return None
        return next(cut.content for cut in self._run(self._index[self._seams[n]] - 1, n) if cut.digest == digest)

    def _fetch(self, indices: Iterable[int]) -> None:
        wanted = [self._hashes[i] for i in indices if i < len(self._hashes) and self._hashes[i] not in self._held]
        if wanted:
            self._held.update(self._read(list(dict.fromkeys(wanted))))

    def _taken(self, i: int) -> bytes:
        """Block ``i``'s content, no longer held: runs go forward, so a block is taken once (but for
        :meth:`content`, which reads again), and a run that goes on for long holds no more than its last block."""
        if self._hashes[i] not in self._held:
            self._fetch(range(i, i + READ_AHEAD))
        return self._held.pop(self._hashes[i])

    def _run(self, first: int, n: int) -> Generator[Cut, None, int]:
        """The blocks of the bytes from the parts' block ``first`` on, cut as one file, until a cut past seam ``n``
        is one of the parts' cuts; the index of the parts' block that starts there."""
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
                self._runs[digest] = n
                yield Cut(digest, len(data), data)
                end = base + cut_at + done
                if end > seam and end in self._index:
                    return self._index[end]
            pending = pending[done:]
            cut_at += done


def seams_of(part_sizes: Iterable[int]) -> list[int]:
    """The offsets where parts of ``part_sizes`` meet. Example: ``seams_of([5, 5, 2])`` is ``[5, 10]``."""
    return list(itertools.accumulate(part_sizes))[:-1]
