"""The S3 path of ``bench.serve``: the same PUTs and GETs through ``casstor serve --s3``, signed, and one large
multipart upload against a tree store of the same size.

wrk cannot sign a request (its Lua has no HMAC), so every S3 request of a
wrk run is a **presigned URL** made beforehand by botocore: Signature V4 in
the query string, checked by the server on every request exactly as a
header signature is (the canonical request, the signing key, the HMAC), with
``UNSIGNED-PAYLOAD`` as every presigned PUT has. What that leaves out, against
boto3's default header signing, is the SHA-256 of the body (which the server
computes anyway for its checksum check when a client sends one) and
aws-chunked framing.

:class:`S3Face` runs the S3 server beside the plain one (its own
credentials file, 0600, one bucket), writes the URL files ``put.lua`` and
``get.lua`` read, and measures the **multipart upload** of ``size`` random
bytes by boto3's transfer manager (8 MiB parts, 10 threads: its defaults)
against ``casstor store DIR PREFIX`` of a directory holding another file of
random bytes of the same size (distinct, so neither deduplicates the other),
each timed with the CPU of its client, of the server and of the node. They
alternate, ``MULTIPART_ROUNDS`` pairs (fresh random bytes each), each on
quiet nodes (``quiet``: no compaction running), after settling pairs until the
node's JIT compiler took under :data:`bench.cpu.SETTLED_SHARE` of its CPU in
one (at most ``most_settling``; the bench's ``--settle``); the figures are the
medians and the ratio is that of the median rates. The node's CPU is counted from the
launcher's pid files under ``CASSTOR_HOME`` (a node the bench did not start
too), else it is unknown.

:meth:`S3Face.checksum_uploads` times the same multipart upload with each
checksum boto3 can send (``CHECKSUM_ALGORITHMS``: the server checks each part's
and keeps the object's), as ratios to boto3's default CRC32 in the same run: a
client's choice of checksum should not cost it throughput.

:meth:`S3Face.delete_many` times DeleteObjects of keys 1,000 a request (the
most S3 takes; boto3's ``objects.delete()`` and Hadoop's s3a, 250 a page,
delete trees so), its figure the time a key.

:meth:`S3Face.list_uploads` times ListMultipartUploads of a bucket holding many
uploads under way (each record is a small file the listing reads), 1,000 a
page, its figure the time an upload.

:meth:`S3Face.complete_many` times the CompleteMultipartUpload of an upload of
many parts (S3 allows 10,000): the parts are one 5 MiB body sent again and
again (stored once: the upload is quick; Complete's work is per part, not per
byte), with boto3's default CRC32. Its figure is the Complete's time a part,
and that time for 10,000 parts against botocore's read timeout (60 s), past
which boto3 gives up on the answer and sends the Complete again.

Example (what ``bench.serve --s3`` does)::

    >>> face = S3Face(workdir, server_args)                        # doctest: +SKIP
    >>> face.put_urls("64k", 65536, count=5000)                    # doctest: +SKIP
    >>> face.multipart_vs_tree(1024 * 1024 * 1024, node_pids, quiet)  # doctest: +SKIP
    {'bytes': 1073741824, 'multipart': {...}, 'tree_store': {...}, 'ratio': 1.04, 'ratios': [...]}
    >>> face.list_uploads(1000, quiet)["ms_per_upload"]          # doctest: +SKIP
    0.5
    >>> face.complete_many(1000, quiet)["of_read_timeout"]        # doctest: +SKIP
    0.21
    >>> face.checksum_uploads(64 * 1024 * 1024, node_pids, quiet)["ratios"]  # doctest: +SKIP
    {'CRC32': 1.0, 'CRC32C': 0.899, 'CRC64NVME': 0.969, 'SHA256': 0.877}

Failures: a server that does not start, a bucket that cannot be made or an upload that fails raise
:class:`~casstor_ops.errors.CasstorError` (one line, via the bench's runner).
"""

from __future__ import annotations

import os
import subprocess
import sys
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import count
from pathlib import Path

from bench.common import MB, median_figures
from bench.cpu import Cost, CpuMeter, compiler_share, process_tree, settle
from casstor_ops.errors import CasstorError
from casstor_ops.serve.process import ServerProcess

ACCESS_KEY, SECRET_KEY = "AKIABENCHSERVE", "bench-serve-secret"
BUCKET = "bench-serve-s3"
URL_SECONDS = 3600  # a presigned URL's life: longer than any run
MULTIPART_PART = 8 * 1024 * 1024  # boto3's default part size and threshold
WRITE_CHUNK = 8 * 1024 * 1024
MULTIPART_ROUNDS = 3  # pairs of (multipart, tree store), alternated
# The checksums boto3 offers an upload (with awscrt: CRC32C, CRC64NVME), its default CRC32 first: the reference.
CHECKSUM_ALGORITHMS = ("CRC32", "CRC32C", "CRC64NVME", "SHA256")
MOST_PARTS = 10_000  # S3's limit of parts an upload
READ_TIMEOUT_S = 60.0  # botocore's default read_timeout: a Complete must answer within it
CLIENT_THREADS = 8  # boto3 requests at once while many parts or objects are put
LIST_ROUNDS = 3  # ListMultipartUploads of the same uploads: the first on a node just started pays its compiling


class S3Face:
    """``casstor serve --s3`` for one bench run, its bucket and a signing client (see the module docstring)."""

    def __init__(self, workdir: Path, server_args: list[str]) -> None:
        import boto3
        from botocore.config import Config

        credentials = workdir / "s3-credentials"
        credentials.touch(mode=0o600)
        credentials.write_text(f"[bench]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
        self.workdir = workdir
        self.server = ServerProcess("--s3", "--s3-credentials", str(credentials), *server_args)
        self.client = boto3.client("s3", endpoint_url=f"http://{self.server.host}:{self.server.port}",
                                   aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                   region_name="us-east-1",
                                   config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        try:
            self.client.create_bucket(Bucket=BUCKET)
        except Exception as err:
            self.server.stop()
            raise CasstorError(f"the S3 server refused to make the bench's bucket: {err}") from None

    def url_file(self, name: str, method: str, keys: list[str]) -> Path:
        """A file of presigned paths with their queries (``/bucket/key?X-Amz-...``), one a line, for wrk."""
        operation = "put_object" if method == "PUT" else "get_object"
        root = f"http://{self.server.host}:{self.server.port}"
        path = self.workdir / f"s3-{name}.txt"
        path.write_text("".join(self.client.generate_presigned_url(operation, Params={"Bucket": BUCKET, "Key": key},
                                                                   ExpiresIn=URL_SECONDS)[len(root):] + "\n"
                                for key in keys))
        return path

    def keys(self, prefix: str) -> list[str]:
        """The keys committed under ``prefix``."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def multipart_vs_tree(self, size: int, node_pids: list[int], quiet: Callable[[], None],
                          rounds: int = MULTIPART_ROUNDS, most_settling: int = 0,
                          log: Callable[[str], None] = print) -> dict:
        """Multipart uploads of ``size`` random bytes alternated with tree stores of as many other random bytes:
        settling pairs (at most ``most_settling``) until the node's compiler is quiet, then ``rounds`` pairs, each
        run on quiet nodes; the medians (see the module docstring)."""
        settling = count(1)
        shares = settle(lambda: _compiler_share(self._multipart_and_tree(size, node_pids, quiet,
                                                                          f"settle-{next(settling)}")),
                        most_settling, log)
        pairs = [self._multipart_and_tree(size, node_pids, quiet, str(round_)) for round_ in range(rounds)]
        multipart, tree_store = (median_figures([pair[i] for pair in pairs]) for i in (0, 1))
        return {"bytes": size, "part_bytes": MULTIPART_PART, "rounds": rounds, "settling_compiler_shares": shares,
                "multipart": multipart, "tree_store": tree_store,
                "ratio": round(multipart["mb_per_s"] / tree_store["mb_per_s"], 3),
                "ratios": [round(up["mb_per_s"] / tree["mb_per_s"], 3) for up, tree in pairs]}

    def _multipart_and_tree(self, size: int, node_pids: list[int], quiet: Callable[[], None],
                            round_: str) -> tuple[dict, dict]:
        upload, tree = self.workdir / "multipart.bin", self.workdir / f"tree-{round_}" / "large.bin"
        tree.parent.mkdir()
        for path in (upload, tree):
            _random_file(path, size)
        multipart = self._upload(upload, f"multipart/large-{round_}.bin", node_pids, quiet)
        quiet()
        with CpuMeter(node_pids).measure() as cost:
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "casstor_ops.cli.main", "store", str(tree.parent),
                                   f"bench-serve-tree-{round_}/", "--quiet"], capture_output=True, text=True)
            tree_s = time.perf_counter() - started
        tree_store = _rate(size, tree_s, cost)
        if done.returncode != 0:
            raise CasstorError(f"casstor store of the tree failed: {done.stderr.strip()[-300:]}")
        for path in (upload, tree):
            path.unlink()
        return multipart, tree_store

    def checksum_uploads(self, size: int, node_pids: list[int], quiet: Callable[[], None],
                         rounds: int = MULTIPART_ROUNDS) -> dict:
        """Multipart uploads of ``size`` random bytes (new each round) with each of :data:`CHECKSUM_ALGORITHMS`,
        in turn, ``rounds`` times; each algorithm's median figures and its ratio to boto3's default, CRC32."""
        runs: dict[str, list[dict]] = {algorithm: [] for algorithm in CHECKSUM_ALGORITHMS}
        upload = self.workdir / "checksummed.bin"
        for round_ in range(rounds):
            for algorithm in CHECKSUM_ALGORITHMS:
                _random_file(upload, size)
                runs[algorithm].append(self._upload(upload, f"checksums/{algorithm}-{round_}.bin", node_pids, quiet,
                                                    {"ChecksumAlgorithm": algorithm}))
        upload.unlink()
        medians = {algorithm: median_figures(figures) for algorithm, figures in runs.items()}
        default = medians[CHECKSUM_ALGORITHMS[0]]["mb_per_s"]
        return {"bytes": size, "part_bytes": MULTIPART_PART, "rounds": rounds, "uploads": medians,
                "ratios": {algorithm: round(m["mb_per_s"] / default, 3) for algorithm, m in medians.items()}}

    def _upload(self, path: Path, key: str, node_pids: list[int], quiet: Callable[[], None],
                extra: dict | None = None) -> dict:
        """boto3's transfer manager uploading ``path`` as ``key`` on quiet nodes: its rate and CPU a MB."""
        from boto3.s3.transfer import TransferConfig

        config = TransferConfig(multipart_threshold=MULTIPART_PART, multipart_chunksize=MULTIPART_PART)
        size = path.stat().st_size
        quiet()
        with CpuMeter(node_pids, process_tree(self.server.process.pid)).measure() as cost:
            started = time.perf_counter()
            self.client.upload_file(str(path), BUCKET, key, Config=config, ExtraArgs=extra)
            seconds = time.perf_counter() - started
        return _rate(size, seconds, cost)  # the cost is counted when its block ends

    def delete_many(self, keys: int, quiet: Callable[[], None]) -> dict:
        """``keys`` small objects put, then on quiet nodes listed by ListObjectVersions and deleted by DeleteObjects,
        1,000 keys a page and a request: the seconds of each, and a key."""
        names = [f"delete/{n:06d}" for n in range(keys)]
        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(lambda key: self.client.put_object(Bucket=BUCKET, Key=key, Body=key.encode()), names))
        quiet()
        started = time.perf_counter()
        listed = sum(len(page.get("Versions", [])) for page in
                     self.client.get_paginator("list_object_versions").paginate(Bucket=BUCKET, Prefix="delete/"))
        versions_s = time.perf_counter() - started
        if listed != keys:
            raise CasstorError(f"ListObjectVersions listed {listed} versions of {keys} keys")
        quiet()
        started = time.perf_counter()
        for start in range(0, keys, 1000):
            answer = self.client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": key} for key in
                                                                                   names[start:start + 1000]]})
            if answer.get("Errors"):
                raise CasstorError(f"DeleteObjects refused keys: {answer['Errors'][:3]}")
        seconds = time.perf_counter() - started
        return {"keys": keys, "seconds": round(seconds, 2), "ms_per_key": round(seconds * 1000 / keys, 3),
                "versions_seconds": round(versions_s, 2), "versions_ms_per_key": round(versions_s * 1000 / keys, 3)}

    def list_uploads(self, uploads: int, quiet: Callable[[], None]) -> dict:
        """``uploads`` multipart uploads created (no part), then listed :data:`LIST_ROUNDS` times on quiet nodes by
        ListMultipartUploads, 1,000 a page, then aborted: the median listing's seconds, and an upload."""
        keys = [f"uploads/{n:06d}" for n in range(uploads)]
        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            ids = list(pool.map(lambda key: self.client.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"],
                                keys))
        times = []
        for _ in range(LIST_ROUNDS):
            quiet()
            started = time.perf_counter()
            listed = sum(len(page.get("Uploads", [])) for page in self.client.get_paginator(
                "list_multipart_uploads").paginate(Bucket=BUCKET, Prefix="uploads/"))
            times.append(time.perf_counter() - started)
            if listed != uploads:
                raise CasstorError(f"ListMultipartUploads listed {listed} of {uploads} uploads")
        seconds = statistics.median(times)
        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(lambda pair: self.client.abort_multipart_upload(Bucket=BUCKET, Key=pair[0], UploadId=pair[1]),
                          zip(keys, ids)))
        return {"uploads": uploads, "seconds": round(seconds, 2), "ms_per_upload": round(seconds * 1000 / uploads, 3),
                "rounds": [round(t, 2) for t in times]}

    def complete_many(self, parts: int, quiet: Callable[[], None]) -> dict:
        """An upload of ``parts`` parts (one 5 MiB body each but the last) completed on quiet nodes: the Complete's
        seconds, a part, and for :data:`MOST_PARTS` parts as a fraction of :data:`READ_TIMEOUT_S`."""
        body, key = os.urandom(5 * 1024 * 1024), f"complete/{parts}-parts"
        upload = self.client.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]

        def send(number: int) -> dict:
            sent = self.client.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=number,
                                           Body=body if number < parts else b"tail", ChecksumAlgorithm="CRC32")
            return {"PartNumber": number, "ETag": sent["ETag"], "ChecksumCRC32": sent["ChecksumCRC32"]}

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            listed = list(pool.map(send, range(1, parts + 1)))
        quiet()
        started = time.perf_counter()
        self.client.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload,
                                              MultipartUpload={"Parts": listed})
        seconds = time.perf_counter() - started
        return {"parts": parts, "seconds": round(seconds, 2), "ms_per_part": round(seconds * 1000 / parts, 3),
                "of_read_timeout": round(seconds / parts * MOST_PARTS / READ_TIMEOUT_S, 3)}

    def remove_all(self) -> int:
        """Delete every object of the bucket, then the bucket; how many objects."""
        keys = self.keys("")
        for start in range(0, len(keys), 1000):
            self.client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]]})
        self.client.delete_bucket(Bucket=BUCKET)
        return len(keys)


def _random_file(path: Path, size: int) -> None:
    with path.open("wb") as out:
        for start in range(0, size, WRITE_CHUNK):
            out.write(os.urandom(min(WRITE_CHUNK, size - start)))


def _rate(size: int, seconds: float, cost: Cost) -> dict:
    return {"seconds": round(seconds, 2), "mb_per_s": round(size / MB / seconds, 2),
            **{k: None if v is None else round(v, 2) for k, v in cost.per_mb(size).items()},
            "node_s": cost.node_s, "compiler_s": cost.compiler_s}


def _compiler_share(runs: Sequence[dict]) -> float:
    """The share of the node's CPU its compiler threads took over ``runs`` (their :func:`_rate` figures)."""
    return compiler_share(map(Cost.of, runs))
