"""Real S3 clients against a real ``casstor serve --s3`` process: rclone (Debian's package) and s3fs/fsspec.

rclone is configured by ``RCLONE_CONFIG_*`` variables only (no config
file); its ``sync`` goes both ways, with a file above its multipart cutoff,
and ``rclone check`` (sizes and MD5 hashes, its default) must find no
difference. s3fs is casstor's own URL layer (:mod:`casstor_ops.store.trees.locations`)
pointed at casstor itself with a 0600 ``--storage-options-file``.
"""

from __future__ import annotations

import json

from casstor_ops.store.trees.locations import read_storage_options_file, resolve

from .s3_support import KEY, RCLONE, SECRET, client_tree, rclone, spark_s3a_roundtrip


def test_rclone_syncs_a_tree_in_and_out_and_check_finds_no_difference(server, s3, tmp_path):
    assert RCLONE is not None, "rclone is not installed (Debian's package rclone)"
    s3.create_bucket(Bucket="rclone")
    files = client_tree(tmp_path / "in")
    for args in (("sync", str(tmp_path / "in"), "cas:rclone/tree"), ("check", str(tmp_path / "in"), "cas:rclone/tree"),
                 ("sync", "cas:rclone/tree", str(tmp_path / "out"))):
        done = rclone(server, *args)
        assert done.returncode == 0, done.stderr
    assert "0 differences found" in done.stderr or "0 differences found" in rclone(
        server, "check", str(tmp_path / "in"), "cas:rclone/tree").stderr
    for name, data in files.items():
        assert (tmp_path / "out" / name).read_bytes() == data, name
    assert s3.head_object(Bucket="rclone", Key="tree/sub/deeper/c.bin")["ETag"].endswith('-3"')  # multipart


def test_s3fs_through_casstors_url_layer_round_trips_a_tree(server, s3, tmp_path):
    s3.create_bucket(Bucket="fsspec")
    options_file = tmp_path / "s3.options"
    options_file.write_text(json.dumps({"endpoint_url": f"http://{server.host}:{server.port}", "key": KEY,
                                        "secret": SECRET, "client_kwargs": {"region_name": "us-east-1"}}))
    options_file.chmod(0o600)
    location = resolve("s3://fsspec/tree/", read_storage_options_file(str(options_file)))
    root = location.path + "/"
    files = client_tree(tmp_path / "in")
    for name, data in files.items():
        location.fs.pipe_file(f"{root}{name}", data)
    location.fs.invalidate_cache()
    found = sorted(p.removeprefix(root) for p in location.fs.find(location.path))
    assert found == sorted(files)
    for name, data in files.items():
        assert location.fs.cat_file(f"{root}{name}") == data, name
    assert location.fs.info(f"{root}sub/b.bin")["size"] == 300_000
    location.fs.rm(f"{root}a.txt")
    location.fs.invalidate_cache()
    assert not location.fs.exists(f"{root}a.txt")


def test_spark_s3a_writes_a_dataframe_as_parquet_and_reads_it_back_equal(server, s3, tmp_path):
    s3.create_bucket(Bucket="sparky")
    code, output = spark_s3a_roundtrip(tmp_path, "s3a://sparky/frame.parquet", {
        "spark.hadoop.fs.s3a.endpoint": f"http://{server.host}:{server.port}",
        "spark.hadoop.fs.s3a.path.style.access": "true"})
    assert code == 0, output[-5000:]
    assert "ROUNDTRIP equal 5000" in output, output[-5000:]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="sparky", Prefix="frame.parquet/")["Contents"]]
    assert "frame.parquet/_SUCCESS" in keys and any(k.endswith(".parquet") for k in keys), keys
    assert not [k for k in keys if "_temporary" in k], keys
