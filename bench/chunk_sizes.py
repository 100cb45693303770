"""Chunk sizes on versioned source trees: dedup, stored bytes, rows and chunk+hash speed per average block size.

The source corpus (:mod:`bench.source_corpus`: consecutive Django 5.0.x
release tars, un-gzipped) is cut with the store's own chunker
(:func:`casstor_ops.store.blocks.chunking.chunks`, FastCDC 2020, as a store cuts
blocks) at several averages, each with the default's proportions (min =
avg / 3, max = avg x 16 / 3, normalised chunking 2: 16/48/256 KiB is the
default), and every block is hashed with the store's block hash. Per
setting: logical bytes, blocks, unique blocks and bytes (after dedup),
stored bytes (each unique block through ``BlockCodec.parse("zstd:3")``,
which keeps a block raw when it does not shrink enough), and an estimate
of one replica's bytes on disk: stored bytes plus the per-row costs
measured by :mod:`bench.row_costs` (``docs/operations.md``, "Bytes per
row"). Speed: chunk+hash and zstd:3 of the unique blocks, MB/s and CPU ms
per MB on one core (best of ``--repeat``; the chunk+hash rounds interleave
the settings). Two corpora from the same releases: the tars, and the tars'
regular files one by one (what ``casstor store DIR PREFIX`` of each unpacked
release cuts). One process, no Cassandra. Every figure is also printed as a
ratio against the default (48 KiB), measured in the same run.

Example::

    $ .venv/bin/python -m bench.chunk_sizes --repeat 3 --avg-kib 8 16 24 32 48

Results are printed and written as JSON (``bench/results/chunk_sizes.json``).
Failures: a corpus that cannot be fetched ends the run with one line (exit 1).
"""

from __future__ import annotations

import io
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from casstor_ops.cli.args import OneLineParser
from casstor_ops.cluster.paths import project_root
from casstor_ops.errors import CasstorError, run_reporting_errors
from casstor_ops.store.blocks.chunking import chunks
from casstor_ops.store.blocks.codec import BlockCodec
from casstor_ops.store.blocks.hashing import block_hash
from casstor_ops.store.schema import StoreSettings

from bench.common import MB, publish
from bench.source_corpus import release_tars

KIB = 1024
DEFAULT_AVERAGES_KIB = (16, 48, 96, 128, 192, 256)
REFERENCE_KIB = StoreSettings().chunk_avg // KIB
CODEC = "zstd:3"
DEFAULT_OUTPUT = project_root() / "bench" / "results" / "chunk_sizes.json"
# One replica's bytes on disk per row, measured by bench.row_costs (docs/operations.md, "Bytes per row").
BLOCK_ROW_OVERHEAD = 91.9   # casstor_data.blocks, besides the stored content; one per unique block
INDEX_ROW = 86.9            # casstor_data.existing_blocks; one per unique block
BLOCK_LIST_ENTRY = 52.9     # casstor_meta.file_blocks; one per block of every file
HEAD_ROW = 82.0             # casstor_meta.files; one per file


def settings_for(avg_kib: int) -> StoreSettings:
    """The default's proportions (16/48/256 KiB) around an average of ``avg_kib`` KiB."""
    avg = avg_kib * KIB
    return StoreSettings(chunk_min=avg // 3, chunk_avg=avg, chunk_max=avg * 16 // 3)


def disk_estimate(stored: int, unique_blocks: int, blocks: int, files: int) -> dict[str, float]:
    """One replica's rows and estimated bytes on disk: stored content plus each table's measured per-row cost."""
    return {"rows": 2 * unique_blocks + blocks + files,
            "disk_bytes": stored + unique_blocks * (BLOCK_ROW_OVERHEAD + INDEX_ROW)
            + blocks * BLOCK_LIST_ENTRY + files * HEAD_ROW}


def _timed(work: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of ``work`` (one thread: CPU is this process's)."""
    started, started_cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - started, time.process_time() - started_cpu


def _best(times: list[tuple[float, float]]) -> tuple[float, float]:
    return min(wall for wall, _ in times), min(cpu for _, cpu in times)


def tree_files(tars: list[Path]) -> list[bytes]:
    """The regular files of ``tars``, each as its own source: what ``casstor store DIR PREFIX`` of each unpacked
    release would cut (every file its own blocks and head; a tar adds a header with its path and mtime per file)."""
    files = []
    for path in tars:
        with tarfile.open(path) as tar:
            files += [tar.extractfile(member).read() for member in tar if member.isfile()]
    return files


def _chunks_of(source: Path | bytes, settings: StoreSettings) -> Iterator[memoryview]:
    return chunks(io.BytesIO(source) if isinstance(source, bytes) else source, settings)


def _chunk_and_hash(sources: list[Path | bytes], settings: StoreSettings) -> None:
    for source in sources:
        for chunk in _chunks_of(source, settings):
            block_hash(chunk)


def measure(sources: list[Path | bytes], avg_kib: int, repeat: int) -> dict:
    """Dedup, stored bytes, rows, disk estimate and zstd speed of one chunker setting on ``sources`` (files)."""
    settings, codec = settings_for(avg_kib), BlockCodec.parse(CODEC)
    unique: dict[bytes, bytes] = {}
    blocks = logical = 0
    for source in sources:
        for chunk in _chunks_of(source, settings):
            blocks += 1
            logical += len(chunk)
            unique.setdefault(block_hash(chunk), bytes(chunk))
    contents = list(unique.values())
    unique_bytes = sum(map(len, contents))
    stored = sum(len(codec.encode(b)[1]) for b in contents)
    zstd_wall, zstd_cpu = _best([_timed(lambda: [codec.encode(b) for b in contents]) for _ in range(repeat)])
    return {"chunk_min": settings.chunk_min, "chunk_avg": settings.chunk_avg, "chunk_max": settings.chunk_max,
            "logical_bytes": logical, "blocks": blocks, "unique_blocks": len(contents),
            "unique_bytes": unique_bytes, "stored_bytes": stored,
            **disk_estimate(stored, len(contents), blocks, len(sources)),
            "zstd_mbps": unique_bytes / MB / zstd_wall, "zstd_cpu_ms_per_mb": zstd_cpu * 1e3 / (unique_bytes / MB)}


def chunk_hash_speeds(sources: list[Path | bytes], averages: list[int], repeat: int) -> dict[int, dict]:
    """Chunk+hash MB/s and CPU ms per MB of each average, best of ``repeat`` rounds; each round runs every
    average in turn, so a change of the machine's load weighs on all of them alike."""
    times: dict[int, list] = {avg: [] for avg in averages}
    for _ in range(repeat):
        for avg in averages:
            times[avg].append(_timed(lambda: _chunk_and_hash(sources, settings_for(avg))))
    logical = sum(len(s) if isinstance(s, bytes) else s.stat().st_size for s in sources) / MB
    return {avg: {"chunk_hash_mbps": logical / wall, "chunk_hash_cpu_ms_per_mb": cpu * 1e3 / logical}
            for avg, (wall, cpu) in ((avg, _best(t)) for avg, t in times.items())}


def measure_corpus(sources: list[Path | bytes], averages: list[int], repeat: int) -> dict[str, dict]:
    """:func:`measure` and :func:`chunk_hash_speeds` of each average, by average (as a string)."""
    speeds = chunk_hash_speeds(sources, averages, repeat)
    return {str(avg): {**measure(sources, avg, repeat), **speeds[avg]} for avg in averages}


# (label, key, absolute format): the report's columns; every ratio is figure / the reference's figure.
COLUMNS = (("mean KiB", None, "{:.1f}"), ("blocks", "blocks", "{:,}"), ("unique", "unique_blocks", "{:,}"),
           ("unique MB", "unique_bytes", "{:.1f}"), ("stored MB", "stored_bytes", "{:.1f}"),
           ("rows", "rows", "{:,}"), ("disk MB", "disk_bytes", "{:.1f}"),
           ("chunk+hash MB/s", "chunk_hash_mbps", "{:.0f}"), ("CPU ms/MB", "chunk_hash_cpu_ms_per_mb", "{:.2f}"),
           ("zstd MB/s", "zstd_mbps", "{:.0f}"), ("zstd CPU ms/MB", "zstd_cpu_ms_per_mb", "{:.2f}"))


def _value(figures: dict, key: str | None) -> float:
    if key is None:
        return figures["logical_bytes"] / figures["blocks"] / KIB
    return figures[key] / MB if key.endswith("_bytes") else figures[key]


def report(results: dict) -> str:
    """Per corpus, two tables, one row per average: absolute figures, then ratios against the reference average."""
    widths = [max(len(label), 8) + 2 for label, _, _ in COLUMNS]
    head = f"  {'min/avg/max KiB':<17}" + "".join(f"{label:>{w}}" for (label, _, _), w in zip(COLUMNS, widths))

    def name(f: dict) -> str:
        return f"{f['chunk_min'] / KIB:.1f}/{f['chunk_avg'] // KIB}/{f['chunk_max'] / KIB:.1f}"

    lines = [f"Chunk sizes, one core, speeds best of {results['repeat']}; MB = 10^6 bytes; "
             f"disk = stored ({results['codec']}) + per-row costs, one replica; "
             "rows = 2 per unique block + 1 per block + 1 per file"]
    for corpus in results["corpora"].values():
        by_avg, ref = corpus["settings"], corpus["settings"][str(results["reference_kib"])]
        lines += [f"{corpus['what']} ({corpus['files']:,} files, {ref['logical_bytes'] / MB:.1f} MB logical):", head]
        lines += [f"  {name(f):<17}" + "".join(f"{fmt.format(_value(f, key)):>{w}}"
                                              for (_, key, fmt), w in zip(COLUMNS, widths)) for f in by_avg.values()]
        lines += [f" each figure / the {results['reference_kib']} KiB default's, same run:", head]
        lines += [f"  {name(f):<17}" + "".join(f"{_value(f, key) / _value(ref, key):>{w}.3f}"
                                              for (_, key, _), w in zip(COLUMNS, widths)) for f in by_avg.values()]
    return "\n".join(lines)


def main() -> None:
    parser = OneLineParser(prog="python -m bench.chunk_sizes", description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=4, help="consecutive Django 5.0.x releases (1-8)")
    parser.add_argument("--avg-kib", type=int, nargs="+", default=list(DEFAULT_AVERAGES_KIB),
                        help=f"average block sizes in KiB ({REFERENCE_KIB}, the default, is always measured)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "casstor" / "corpus")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    if args.repeat < 1 or not 1 <= args.versions <= 8:
        parser.error("--repeat takes at least 1, --versions 1 to 8")
    averages = sorted({*args.avg_kib, REFERENCE_KIB})
    try:
        for avg in averages:
            settings_for(avg)  # a size FastCDC does not take is a usage error, before any download
    except CasstorError as err:
        parser.error(str(err))

    def body() -> int:
        versions = [f"5.0.{n}" for n in range(1, args.versions + 1)]
        paths = release_tars(args.cache, "Django", versions)
        what = f"Django {versions[0]}" + (f"..{versions[-1]}" if len(versions) > 1 else "")
        corpora = {"tars": (f"{what} as release tars", paths),
                   "tree": (f"{what} unpacked, file by file", tree_files(paths))}
        results = {"repeat": args.repeat, "reference_kib": REFERENCE_KIB, "codec": CODEC, "corpora": {
            key: {"what": label, "files": len(sources),
                  "settings": measure_corpus(sources, averages, args.repeat)}
            for key, (label, sources) in corpora.items()}}
        return publish(results, report(results), args.output)

    sys.exit(run_reporting_errors(body))


if __name__ == "__main__":
    main()
