"""python -m bench.serve end to end, in smoke mode, on the session's test node: wrk ran, every figure measured,
the dedup check passed, nothing left behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from casstor_ops.cluster.paths import project_root
from casstor_ops.store.api import Store

from bench.raw_driver import SCRATCH_KS


def test_smoke_bench_measures_every_figure_and_cleans_up(cql, tmp_path: Path) -> None:
    output = tmp_path / "serve.json"
    proc = subprocess.run([sys.executable, "-m", "bench.serve", "--smoke", "--seconds", "1", "--sizes", "4096",
                           "--output", str(output)], capture_output=True, text=True, timeout=600, cwd=project_root())
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(output.read_text())
    [row] = results["rows"]
    # --smoke: no settling round, one measured round, whose rates are the figures.
    assert row["settling_compiler_shares"] == [] and len(row["compiler_shares"]) == 1
    for op in ("put", "raw_put"):
        assert row[op]["rounds_per_s"] == [row[op]["per_s"]]
    assert "PUT req/s by round" in proc.stdout
    for op in ("put", "get", "get_again", "raw_put", "raw_get"):
        assert row[op]["per_s"] > 0 and row[op]["mb_per_s"] > 0 and row[op]["node_ms_per_mb"] > 0, (op, row)
    for op in ("put", "get", "get_again"):
        assert 0 < row[op]["p50_ms"] <= row[op]["p99_ms"] and row[op]["server_ms_per_mb"] > 0, row
        assert row[f"{op}_ratio"] > 0
    # The second GET run reads the keys the first one read: the content cache answers most of its GETs.
    assert row["get"]["cache_misses"] > 0 and row["get_again"]["cache_hits"] > row["get_again"]["cache_misses"]
    assert results["dedup"] == {"bytes": 1024 * 1024, "first_new_bytes": 1024 * 1024, "second_new_bytes": 0}
    assert "HTTP/raw" in proc.stdout and "p99" in proc.stdout
    assert results["keys_removed"] >= row["put"]["requests"] + 2  # and any PUT still in flight at the end
    assert not list(Store(cql).list("bench-serve/"))
    assert cql.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
                       (SCRATCH_KS,)).one() is None


def test_smoke_bench_s3_path_measures_signed_puts_gets_and_a_multipart_upload(cql, tmp_path: Path) -> None:
    """`--s3 --multipart-mb 16 --checksum-mb 8 --no-raw --settle 1 --rounds 2`: the S3 server's PUT and GET
    (presigned URLs) measured beside the plain server's with their ratios, in a settling round and two measured
    rounds, the multipart upload against a tree store of as many bytes, an upload with each checksum boto3 offers
    against its CRC32, and the bucket and the tree's files removed at the end."""
    output = tmp_path / "serve.json"
    proc = subprocess.run([sys.executable, "-m", "bench.serve", "--smoke", "--seconds", "1", "--sizes", "65536",
                           "--no-raw", "--s3", "--multipart-mb", "16", "--checksum-mb", "8", "--settle", "1",
                           "--rounds", "2", "--output", str(output)],
                          capture_output=True, text=True, timeout=600, cwd=project_root())
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(output.read_text())
    [row] = results["rows"]
    assert len(row["settling_compiler_shares"]) == 1 and len(row["compiler_shares"]) == 2 and "raw_put" not in row
    for op in ("put", "s3_put"):  # the figures are the lower median round's, both rounds' rates beside them
        assert len(row[op]["rounds_per_s"]) == 2 and row[op]["per_s"] == min(row[op]["rounds_per_s"])
    assert row["put_vs_plain"] == round(row["s3_put"]["per_s"] / row["put"]["per_s"], 3)
    for op in ("s3_put", "s3_get"):
        assert row[op]["per_s"] > 0 and 0 < row[op]["p50_ms"] <= row[op]["p99_ms"] and row[op]["server_ms_per_mb"] > 0
    assert row["put_vs_plain"] > 0 and row["get_vs_plain"] > 0 and "S3/plain" in proc.stdout
    multipart = results["multipart"]
    assert multipart["bytes"] == 16 * 1024 * 1024 and multipart["multipart"]["mb_per_s"] > 0
    assert multipart["tree_store"]["mb_per_s"] > 0 and multipart["ratio"] > 0 and "multipart/tree" in proc.stdout
    checksums = results["checksums"]
    assert list(checksums["uploads"]) == ["CRC32", "CRC32C", "CRC64NVME", "SHA256"] and "by checksum" in proc.stdout
    assert checksums["ratios"]["CRC32"] == 1.0 and all(up["mb_per_s"] > 0 for up in checksums["uploads"].values())
    assert not list(Store(cql).list("bench-serve-s3/")) and not list(Store(cql).list("bench-serve/"))
