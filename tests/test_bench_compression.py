"""python -m bench.compression's run on the session's test node with a small generated source corpus: every loop
runs, every restore is compared with its source, and the ratios come out. ~3 min, mostly the fixed costs of its many loops: marked
``slow``, run by ``make test-all`` (``make bench`` runs the bench itself)."""

from __future__ import annotations

import random

import pytest

from bench.compression import MODES, TABLES, compare, run_benchmark


@pytest.mark.slow
def test_the_compression_bench_measures_both_corpora_against_restic(empty_store, tmp_path) -> None:
    source = []
    for n in range(2):  # two "releases" sharing most lines: dedup and compression both have work
        rng = random.Random(n // 2)
        lines = [b"def f%d(x):\n    return x * %d\n" % (i, rng.randint(0, 9)) for i in range(40_000)]
        path = tmp_path / f"release-{n}.tar"
        path.write_bytes(b"".join(lines) + b"# release %d\n" % n)
        source.append(path)
    results = run_benchmark(source, random_mb=2, random_file_count=2, repeat=1, log=lambda line: None)
    ratios = results["ratios"]
    for corpus in ("source", "random"):
        for op in ("store", "restore"):
            assert ratios[f"{corpus}_{op}_zstd:3_vs_none"] > 0
            assert all(ratios[f"{corpus}_{op}_{mode}_vs_restic"] > 0 for mode in MODES)
    disk = results["disk"]["source"]
    assert disk["zstd:3"]["disk_bytes"] < disk["none"]["disk_bytes"]  # text compresses on the node's disk too
    assert all(f["client_ms_per_mb"] > 0 and f["node_ms_per_mb"] is not None for f in results["figures"].values())
    assert set(disk["zstd:3"]["tables"]) == {f"{keyspace}.{table}" for keyspace, table in TABLES}
    assert sum(disk["zstd:3"]["tables"].values()) == disk["zstd:3"]["disk_bytes"]
    against_itself = compare(results, results).splitlines()
    assert len(against_itself) == 2 + len(results["figures"]) - 8 + 4  # 8 restic loops; 2 corpora x 2 modes
    assert all(line.split()[-1] == "1.000" for line in against_itself if not line.endswith(":"))
