"""Where a bulk job's files come from and go to when they are not local paths: URLs of any fsspec filesystem.

An ingest source or a restore destination given as a URL (``s3://bucket/tree/``,
``file:///data/tree``, ``hdfs://namenode/tree``, a chained
``simplecache::s3://…``) is read and written through fsspec, so it need not
be mounted on the executors; any other text is a local path and keeps the
local code (:mod:`casstor_ops.store.trees.source_listing`,
:func:`~casstor_ops.store.trees.destinations.restore_to_path`).

* **Resolving** (:func:`resolve`, on the driver): the filesystem is made from
  the URL, fsspec's own configuration (``FSSPEC_<PROTOCOL>_<OPTION>``
  variables such as ``FSSPEC_S3_ENDPOINT_URL``, ``~/.config/fsspec/*.json``)
  and the job's ``--storage-options-file PATH`` (:func:`read_storage_options_file`:
  a 0600 file, the place for keys) and ``--storage-option KEY=VALUE`` pairs
  (:func:`parse_storage_options`; these win, and may name no secret:
  :func:`secret_keys`). A :class:`Location` pickles
  with those options, so every executor opens the same filesystem with the
  same settings. What the backend's library finds by itself (for ``s3://``,
  botocore's ``AWS_*`` variables and ``~/.aws``) is found where the file is
  opened: on the executors.
* **Listing** (:func:`list_files`, on the driver): the files below a
  directory URL, one file, or the matches of a glob (``**`` recursive), with
  their sizes; the root their IDs are relative to (the directory, the file's
  directory, the glob's part before its first wildcard). Only entries the
  filesystem calls files (a symlinked directory or a FIFO of ``file://`` is
  not one).
* **Reading** (:func:`open_reader`): a streaming file object (reads of
  :data:`STREAM_BLOCK_BYTES` at most are buffered), never the whole file.
* **Writing** (:func:`replacing_writer`): streamed too, and nothing appears at
  the destination unless it was written whole. An object store (S3, GCS,
  Azure) gets the object under its final name as one upload that is only
  committed at the end (S3: a PUT, or a multi-part upload completed at the
  end and aborted on failure); any other filesystem a temporary name beside
  it (``.casstor-<random>.tmp``), moved into place when complete (a rename:
  atomic on a local disk and on HDFS; on a local disk, ``file://``, the
  file is fsynced before the rename and its directory after it, as a path
  restore's). An existing destination is kept unless ``force``: checked
  before writing and again before the commit or move (check-then-act: two
  writers of one name can race). A restore destination on an object store
  must be in a bucket that exists (:func:`make_directory` creates none).

Example::

    >>> location = resolve("s3://bucket/tree/", parse_storage_options(["endpoint_url=http://127.0.0.1:9000"]))  # doctest: +SKIP
    >>> root, files = list_files(location)                                 # doctest: +SKIP
    >>> with open_reader(location.fs, files[0][0]) as reader:             # doctest: +SKIP
    ...     head = reader.read(16)

Failures: a bad ``--storage-option`` or an unknown protocol is a
:class:`~casstor_ops.errors.CasstorError` (exit 2); a URL that does not
exist, holds no file or cannot be listed, or a filesystem package that is
not installed (``s3fs`` for ``s3://``), a CasstorError (exit 1). On the
executors an ``OSError`` (a file that vanished, no permission) propagates
for the caller to record per file, and a backend's own error that is not an
``OSError`` (botocore's "Could not connect to the endpoint URL") becomes a
one-line CasstorError naming the URL.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import posixpath
import re
import secrets
from functools import cache
from typing import TYPE_CHECKING, BinaryIO, Iterator, NamedTuple, Sequence

from casstor_ops.cluster.secret_files import read_private_file
from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.store.trees.temporary import fsync_directory

if TYPE_CHECKING:  # fsspec (and botocore) load when a URL is used: a tree of local files does without ~50 ms
    from fsspec.spec import AbstractFileSystem

# Read buffers and upload parts of this size: memory per open file stays bounded whatever the file size (an
# S3 upload has at most 10,000 parts, so one file up to 160 GiB).
STREAM_BLOCK_BYTES = 16 * 1024 * 1024
# Filesystems whose uploads become visible whole when committed, and that have no rename (a move is a copy).
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss"})
_URL = re.compile(r"^[A-Za-z][\w+.-]*(::[A-Za-z][\w+.-]*)*://")
# Option names that carry a credential in the filesystems fsspec knows (s3fs key/secret/token, gcsfs token,
# adlfs account_key/sas_token/client_secret, …): refused on a command line (see casstor_ops.cli.args).
SECRET_OPTIONS = frozenset({"key", "secret", "token", "password", "passphrase", "credentials"})
SECRET_PARTS = ("secret", "access_key", "account_key", "private_key", "password", "token", "credential")


@cache
def _backend_errors() -> tuple[type[BaseException], ...]:
    """The errors of installed backends that are no OSError (s3fs lets botocore's connection errors through).

    Read when an error is being handled (an ``except`` clause evaluates it only then), so botocore is imported
    only by a failing URL operation."""
    try:
        from botocore.exceptions import BotoCoreError
    except ImportError:
        return ()
    return (BotoCoreError,)


class Location(NamedTuple):
    """A filesystem and a path on it (fsspec's form: no protocol, e.g. ``bucket/tree``)."""

    fs: AbstractFileSystem
    path: str

    def url(self, path: str | None = None) -> str:
        """The URL of ``path`` (default: this location's), for messages and result rows."""
        return self.fs.unstrip_protocol(self.path if path is None else path)


def is_url(text: object) -> bool:
    """Whether ``text`` is a URL (a scheme and ``://``), not a local path.

    Example::

        >>> is_url("s3://bucket/tree"), is_url("file:///data"), is_url("data/tree"), is_url("a:b")
        (True, True, False, False)
    """
    return isinstance(text, str) and _URL.match(text) is not None


def _option(pair: str) -> tuple[str, object] | None:
    """``KEY=VALUE`` as a key and its value (JSON decoded when it is JSON); None when it is no such pair."""
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        return None
    try:
        return key.strip(), json.loads(value)
    except ValueError:
        return key.strip(), value


def parse_storage_options(pairs: Sequence[str] | None) -> dict[str, object]:
    """``KEY=VALUE`` pairs as filesystem options; a VALUE that is valid JSON is decoded (``true``, ``5``,
    ``{"region_name": "eu-west-1"}``), any other is a string.

    Example::

        >>> parse_storage_options(["endpoint_url=http://127.0.0.1:9000", "anon=true"])
        {'endpoint_url': 'http://127.0.0.1:9000', 'anon': True}

    Failures: a pair without ``=`` or with an empty KEY is a CasstorError (exit 2).
    """
    options: dict[str, object] = {}
    for pair in pairs or ():
        option = _option(pair)
        if option is None:
            raise CasstorError(f"--storage-option {pair!r}: expected KEY=VALUE", EXIT_USAGE)
        options[option[0]] = option[1]
    return options


def secret_keys(options: dict[str, object]) -> list[str]:
    """The keys of ``options`` (and of the dicts among their values, e.g. ``client_kwargs``) that name a secret:
    :data:`SECRET_OPTIONS`, or containing one of :data:`SECRET_PARTS`, whatever the case.

    Example::

        >>> secret_keys({"endpoint_url": "http://s3:9000", "Secret": "x", "client_kwargs": {"aws_access_key_id": "y"}})
        ['Secret', 'client_kwargs.aws_access_key_id']
    """
    found = []
    for key, value in options.items():
        name = key.lower()
        if name in SECRET_OPTIONS or any(part in name for part in SECRET_PARTS):
            found.append(key)
        if isinstance(value, dict):
            found += [f"{key}.{inner}" for inner in secret_keys(value)]
    return found


def read_storage_options_file(path: str) -> dict[str, object]:
    """The filesystem options in ``path``: a JSON object, or ``KEY=VALUE`` lines (as ``--storage-option``; blank
    lines and ``#`` comments ignored). The file must be a regular file only its owner may read
    (:func:`~casstor_ops.cluster.secret_files.read_private_file`), since it may hold keys.

    Example::

        >>> read_storage_options_file("/home/me/.casstor/s3.options")      # doctest: +SKIP
        {'endpoint_url': 'http://minio:9000', 'key': 'AKIA…', 'secret': '…'}

    Failures: a file refused by that check, not UTF-8, or whose content is no JSON object or holds a line that
    is no KEY=VALUE pair, is a CasstorError (exit 2) naming the file and the line, never the content.
    """
    where = f"--storage-options-file={path}"
    try:
        text = read_private_file(path, "--storage-options-file").decode()
    except UnicodeDecodeError:
        raise CasstorError(f"{where}: not UTF-8 text", EXIT_USAGE) from None
    if text.lstrip().startswith("{"):
        try:
            options = json.loads(text)
        except ValueError as err:  # its message gives a position, not the content
            raise CasstorError(f"{where}: not valid JSON ({err})", EXIT_USAGE) from None
        if not isinstance(options, dict):
            raise CasstorError(f"{where}: expected a JSON object", EXIT_USAGE)
        return options
    options = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            option = _option(line)
            if option is None:
                raise CasstorError(f"{where}: line {number} is not KEY=VALUE", EXIT_USAGE)
            options[option[0]] = option[1]
    return options


def resolve(url: str, options: dict[str, object] | None = None) -> Location:
    """The filesystem and path of ``url``, with fsspec's configuration and ``options`` (see the module docstring).

    Failures: an unknown protocol or options the filesystem refuses (exit 2), a missing package (exit 1).
    """
    try:
        import fsspec.core  # here, not at the top: see TYPE_CHECKING above

        fs, path = fsspec.core.url_to_fs(url, **(options or {}))
    except ImportError as err:  # fsspec's message names the package to install
        raise CasstorError(f"{url!r}: {' '.join(str(err).split())}") from None
    except (ValueError, TypeError) as err:
        raise CasstorError(f"{url!r}: {' '.join(str(err).split()) or type(err).__name__}", EXIT_USAGE) from None
    return Location(fs, path)


def _listing_error(location: Location, err: BaseException) -> CasstorError:
    what = getattr(err, "strerror", None) or " ".join(str(err).split()) or type(err).__name__
    return CasstorError(f"{location.url()!r}: cannot list it: {what}")


def _files_in(fs: AbstractFileSystem, found: dict[str, dict]) -> dict[str, dict]:
    """The entries of ``found`` that are files, and the files below those that are directories."""
    files = {}
    for path, info in found.items():
        if info.get("type") == "directory":
            files.update(_files_in(fs, fs.find(path, detail=True)))
        elif info.get("type") == "file":
            files[path] = info
    return files


def list_files(location: Location) -> tuple[str, list[tuple[str, int]]]:
    """The root the files' IDs are relative to, and every ``(path, size)`` the URL names, sorted by path.

    Example::

        >>> list_files(resolve("file:///data/tree"))                     # doctest: +SKIP
        ('/data/tree', [('/data/tree/a.bin', 1200), ('/data/tree/sub/b.bin', 80)])

    Failures: a URL that does not exist or names no file, or cannot be listed, is one CasstorError.
    """
    fs, path = location
    try:
        if glob.has_magic(path):
            found = _files_in(fs, fs.glob(path, detail=True))
            root = posixpath.dirname(path[:re.search(r"[*?[]", path).start()])
        elif fs.isdir(path):
            found, root = _files_in(fs, fs.find(path, detail=True)), path.rstrip("/")
        elif fs.isfile(path):
            found, root = {path: fs.info(path)}, posixpath.dirname(path)
        else:
            raise CasstorError(f"{location.url()!r}: no such file or directory")
    except (OSError, *_backend_errors()) as err:
        raise _listing_error(location, err) from None
    if not found:
        raise CasstorError(f"{location.url()!r} holds no files: nothing to ingest")
    return root, sorted((name, int(info.get("size") or 0)) for name, info in found.items())


@contextlib.contextmanager
def backend_errors_as_one_line(url: str) -> Iterator[None]:
    """Let OSError through (the caller records it per file); a backend's own error becomes a CasstorError."""
    try:
        yield
    except _backend_errors() as err:
        raise CasstorError(f"{url}: {type(err).__name__}: {' '.join(str(err).split())}") from None


@contextlib.contextmanager
def open_reader(fs: AbstractFileSystem, path: str) -> Iterator[BinaryIO]:
    """``path`` open for streaming reads (``size`` is its length); see :func:`backend_errors_as_one_line`."""
    with backend_errors_as_one_line(fs.unstrip_protocol(path)), \
            fs.open(path, "rb", block_size=STREAM_BLOCK_BYTES) as reader:
        yield reader


def make_directory(location: Location) -> None:
    """Make a restore destination; refuse one that is a file. On an object store nothing is made (a "directory"
    is a key prefix), and a bucket that does not exist is refused, not created (a mistyped name)."""
    fs, path = location
    try:
        if fs.isfile(path):
            raise CasstorError(f"{location.url()!r} exists and is not a directory")
        if not _is_object_store(fs):
            fs.makedirs(path, exist_ok=True)
        elif not _bucket_exists(fs, bucket := path.split("/", 1)[0]):
            raise CasstorError(f"{location.url()!r}: no bucket {bucket!r} (casstor does not create buckets)")
    except (OSError, *_backend_errors()) as err:
        raise CasstorError(f"{location.url()!r}: cannot make it: "
                           f"{getattr(err, 'strerror', None) or ' '.join(str(err).split())}") from None


def _bucket_exists(fs: AbstractFileSystem, bucket: str) -> bool:
    """Whether ``bucket`` exists (one that exists but refuses us counts: the writes will tell what we may do)."""
    try:
        # s3fs: a HEAD (its exists() also asks the bucket's location, which S3Proxy answers for any name).
        if hasattr(fs, "call_s3"):
            fs.call_s3("head_bucket", Bucket=bucket)
            return True
        return fs.exists(bucket)
    except FileNotFoundError:
        return False
    except PermissionError:
        return True


def _refuse_existing(fs: AbstractFileSystem, path: str, force: bool) -> None:
    if not force and fs.exists(path):
        raise CasstorError(f"{fs.unstrip_protocol(path)}: already exists (use --force to overwrite)")


def _is_local(fs: AbstractFileSystem) -> bool:
    from fsspec.implementations.local import LocalFileSystem  # already loaded: fs is an fsspec filesystem

    return isinstance(fs, LocalFileSystem)


def _is_object_store(fs: AbstractFileSystem) -> bool:
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else fs.protocol
    return not OBJECT_STORES.isdisjoint(protocols)


@contextlib.contextmanager
def replacing_writer(fs: AbstractFileSystem, path: str, force: bool = False) -> Iterator[BinaryIO]:
    """A streaming writer whose content appears at ``path`` only if the ``with`` block completes (see the
    module docstring for each filesystem's atomicity); an existing ``path`` is kept unless ``force``."""
    url = fs.unstrip_protocol(path)
    if not _is_local(fs):
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise CasstorError(f"{url!r}: the name is not valid UTF-8, which this filesystem cannot hold") from None
    with backend_errors_as_one_line(url):
        _refuse_existing(fs, path, force)
        if _is_object_store(fs):
            with _committed_upload(fs, path, force) as out:
                yield out
        else:
            with _renamed_into_place(fs, path, force) as out:
                yield out


@contextlib.contextmanager
def _committed_upload(fs: AbstractFileSystem, path: str, force: bool) -> Iterator[BinaryIO]:
    out = fs.open(path, "wb", block_size=STREAM_BLOCK_BYTES, autocommit=False)
    try:
        yield out
        out.close()
        _refuse_existing(fs, path, force)
    except BaseException:
        with contextlib.suppress(Exception):  # the upload may be what failed; the first error is the one to report
            out.close()
            out.discard()
        raise
    out.commit()


@contextlib.contextmanager
def _renamed_into_place(fs: AbstractFileSystem, path: str, force: bool) -> Iterator[BinaryIO]:
    parent = fs._parent(path)
    fs.makedirs(parent, exist_ok=True)
    temporary = posixpath.join(parent, f".casstor-{secrets.token_hex(8)}.tmp")
    local = _is_local(fs)
    try:
        with fs.open(temporary, "wb", block_size=STREAM_BLOCK_BYTES) as out:
            yield out
            if local:  # on disk before its name is: a crash must not leave a short file that looks restored
                out.flush()
                os.fsync(out.fileno())
        _refuse_existing(fs, path, force)
        fs.mv(temporary, path)
        if local:
            fsync_directory(parent)
    finally:
        with contextlib.suppress(Exception):  # gone once moved; left behind only if the filesystem fails here too
            if fs.exists(temporary):
                fs.rm_file(temporary)
