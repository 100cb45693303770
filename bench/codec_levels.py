"""zstd levels (and bindings) on real blocks: the ratio and the speed behind casstor's default compression.

The first file of the source corpus (:mod:`bench.source_corpus`, a Django
release tar; or ``--file``) is cut into blocks with the store's default
chunker, and every block is compressed and decompressed one at a time, as
the store does, at each level, with ``zstandard`` (casstor's binding) and,
when it is installed, ``pyzstd``. One core, no Cassandra. Figures are
ratios against zstandard level 3: compression ratio, compress and
decompress MB/s (best of ``--repeat``). One more row, ``zstandard:3+dict``,
uses a ``DICT_BYTES`` dictionary trained on the first quarter of the blocks
(what a store-wide trained dictionary could save; casstor does not use one):
a quarter of the blocks it is measured on were its sample, so it is a little
optimistic.

Example::

    $ .venv/bin/python -m bench.codec_levels --repeat 3

Failures: a corpus that cannot be fetched ends the run with one line (exit 1).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import zstandard

from casstor_ops.cli.args import OneLineParser
from casstor_ops.errors import run_reporting_errors
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.schema import StoreSettings

from bench.common import MB
from bench.source_corpus import release_tars

LEVELS = (1, 3, 4, 5, 6, 9)
DICT_BYTES = 64 * 1024


def _codecs(blocks: list[bytes]) -> dict[str, tuple[Callable, Callable]]:
    """label -> (compress(block), decompress(frame)): each binding at each level, and zstandard:3+dict."""
    found = {f"zstandard:{level}": (zstandard.ZstdCompressor(level=level).compress,
                                    zstandard.ZstdDecompressor().decompress) for level in LEVELS}
    trained = zstandard.train_dictionary(DICT_BYTES, blocks[:max(8, len(blocks) // 4)])
    found["zstandard:3+dict"] = (zstandard.ZstdCompressor(level=3, dict_data=trained).compress,
                                 zstandard.ZstdDecompressor(dict_data=trained).decompress)
    try:
        import pyzstd
    except ImportError:
        return found
    found.update({f"pyzstd:{level}": (lambda b, level=level: pyzstd.compress(b, level), pyzstd.decompress)
                  for level in LEVELS})
    return found


def _best(repeat: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def measure(blocks: list[bytes], repeat: int) -> dict[str, dict]:
    """``binding:level`` -> ratio, compress and decompress MB/s."""
    size, figures = sum(map(len, blocks)), {}
    for name, (compress, decompress) in _codecs(blocks).items():
        frames = [compress(b) for b in blocks]
        figures[name] = {
            "ratio": size / sum(map(len, frames)),
            "compress_mbps": size / MB / _best(repeat, lambda: [compress(b) for b in blocks]),
            "decompress_mbps": size / MB / _best(repeat, lambda: [decompress(f) for f in frames])}
    return figures


def report(figures: dict[str, dict], what: str) -> str:
    base = figures["zstandard:3"]
    lines = [f"zstd on the blocks of {what}, one core; each figure / zstandard:3's "
             f"(ratio {base['ratio']:.2f}, compress {base['compress_mbps']:.0f} MB/s, "
             f"decompress {base['decompress_mbps']:.0f} MB/s)",
             f"  {'codec':<14} {'ratio':>7} {'compress':>9} {'decompress':>11}"]
    lines += [f"  {name:<14} {f['ratio'] / base['ratio']:7.3f} {f['compress_mbps'] / base['compress_mbps']:9.3f} "
              f"{f['decompress_mbps'] / base['decompress_mbps']:11.3f}" for name, f in figures.items()]
    return "\n".join(lines)


def main() -> None:
    parser = OneLineParser(prog="python -m bench.codec_levels", description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="a file to cut into blocks (default: Django 5.0.1's tar)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "casstor" / "corpus")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat takes at least 1")

    def body() -> int:
        path = args.file or release_tars(args.cache, "Django", ["5.0.1"])[0]
        blocks = [bytes(c) for c in chunks(path, StoreSettings())]
        print(report(measure(blocks, args.repeat), f"{path.name} ({len(blocks)} blocks)"))
        return 0

    sys.exit(run_reporting_errors(body))


if __name__ == "__main__":
    main()
