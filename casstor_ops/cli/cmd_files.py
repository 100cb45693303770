"""``casstor store | restore | rm | ls | stat | stats | diff``: thin commands over
:class:`~casstor_ops.store.api.Store` and, for whole trees, :mod:`casstor_ops.store.bulk.tree`; history through
:mod:`casstor_ops.store.history.points_in_time`.

Example::

    $ casstor store ./photo.jpg photos/2024/photo.jpg --json
    $ casstor store ./photos photos/                 # a directory: every file below it, several at once
    $ producer | casstor store --stdin backups/stream.bin
    $ casstor restore photos/2024/photo.jpg - > copy.jpg
    $ casstor restore photos/ ./restored             # an ID ending in /: every file under that prefix
    $ casstor ls --versions photos/2024/photo.jpg    # newest first, delete markers included
    $ casstor restore photos/ ./then --at 2026-11-26T14:00:00Z   # the tree as it was (no zone: UTC)
    $ casstor diff photos/ --from 2026-11-26T14:00:00Z --json
    $ casstor stats --json
"""

from __future__ import annotations

import argparse
import os
import sys

from casstor_ops.cli.args import bounded, time_argument, version_argument
from casstor_ops.cli.output import print_json, print_listing
from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.bulk.tree import (MIN_PROCESS_FILES, RESTORE_WORKERS, STORE_WORKERS, TREE_PROCESSES, TreeReport,
                                         restore_tree, store_tree)
from casstor_ops.store.bulk.tree_processes import Standby
from casstor_ops.store.history.points_in_time import compare
from casstor_ops.store.progress import progress_bar
from casstor_ops.store.records import FileInfo, VersionInfo


def _size_of(path: str) -> int | None:
    """The size for the progress bar's ETA, when SRC is a regular file."""
    try:
        return os.stat(path).st_size if path != "-" else None
    except OSError:
        return None


def _store_source(args: argparse.Namespace) -> str:
    """SRC, or ``-`` for ``--stdin``: a usage error unless exactly one of them is given."""
    if args.stdin == (args.src is not None):
        raise CasstorError("store: give SRC or --stdin (standard input), not both or neither", EXIT_USAGE)
    return "-" if args.stdin else args.src


def _tree_done(report: TreeReport, args: argparse.Namespace) -> int:
    """Print a tree command's summary (or JSON), each failed file and each file skipped for a reason (a symlink,
    not followed: not a failure, exit 0 as for an unchanged file) on one line; its exit status."""
    if args.json:
        print_json({"summary": report.summary(), "exit_code": report.exit_code, "files": report.rows})
    elif not args.quiet:
        print(report.summary())
    for row in report.failures + report.skipped_with_reason:
        print(f"casstor: {row['status']}: {row['id']}: {row['error']}", file=sys.stderr)
    return report.exit_code


def _store(args: argparse.Namespace) -> int:
    src_name = _store_source(args)
    if src_name != "-" and os.path.isdir(src_name):
        prefix = args.id if args.id.endswith("/") else args.id + "/"
        # The processes beside this one are forked first, while it is one thread (tree_processes.Standby).
        with Standby(args.processes - 1) as standby, Store.open() as store, \
                progress_bar("store", None, not args.quiet and not args.json) as progress:
            report = store_tree(store, src_name, prefix, args.workers, args.follow_symlinks, progress, args.processes,
                                standby)
        return _tree_done(report, args)
    # Standard input is read whatever it is (a pipe, a FIFO redirected in); a named SRC must be a regular file.
    src = sys.stdin.buffer if src_name == "-" else src_name
    with Store.open() as store, progress_bar("store", _size_of(src_name), not args.quiet) as progress:
        result = store.put(src, args.id, progress=progress)
    if args.json:
        print_json(result.as_dict())
    elif not args.quiet:
        print(f"stored {result.id}: {result.bytes} bytes in {result.blocks} blocks "
              f"({result.new_blocks} new, {result.new_bytes} new bytes stored in {result.new_stored_bytes}) "
              f"in {result.seconds:.2f} s")
    return 0


def _restore(args: argparse.Namespace) -> int:
    if args.id.endswith("/"):
        if args.version is not None:
            raise CasstorError("restore: --version names one file's version; a prefix takes --at", EXIT_USAGE)
        with Store.open() as store, progress_bar("restore", None, not args.quiet and not args.json) as progress:
            report = restore_tree(store, args.id, args.dest, args.force, args.workers, progress, at=args.at)
        return _tree_done(report, args)
    with Store.open() as store:
        head = store.stat(args.id, version=args.version, at=args.at)
        with progress_bar("restore", head.size, not args.quiet) as progress:
            result = store.restore(args.id, args.dest, force=args.force, progress=progress, head=head)
    if args.dest != "-" and not args.quiet:
        print(f"restored {result.id}: {result.bytes} bytes to {args.dest} in {result.seconds:.2f} s", file=sys.stderr)
    return 0


def _rm(args: argparse.Namespace) -> int:
    with Store.open() as store:
        store.remove(args.id)
    return 0


def _info_line(info: FileInfo) -> str:
    when = f"{info.committed_at:%Y-%m-%d %H:%M:%S}" if info.committed_at else "-"
    return f"{info.size:>14}  {when}  {info.id}"


def version_line(found: VersionInfo) -> str:
    """One line of ``casstor ls --versions``: version, commit time, size and hash (or ``deleted``)."""
    info = found.file
    what = "deleted" if found.deleted else f"{info.size:>14}  {info.hash.hex()[:16]}"
    when = f"{info.committed_at:%Y-%m-%d %H:%M:%S.%f}"[:-3] if info.committed_at else "-"
    return f"{info.version}  {when}  {what}"


def _ls_versions(args: argparse.Namespace) -> int:
    with Store.open() as store:
        found = store.versions(args.prefix)
    return print_listing(found, VersionInfo.as_dict, version_line, args.json)


def _ls(args: argparse.Namespace) -> int:
    if args.versions:
        return _ls_versions(args)
    with Store.open() as store:
        files = store.list_all(args.prefix)
    return print_listing(files, FileInfo.as_dict, _info_line, args.json)


def _print_record(record: dict, as_json: bool) -> int:
    if as_json:
        print_json(record)
    else:
        for key, value in record.items():
            print(f"{key}: {value}")
    return 0


def _stat(args: argparse.Namespace) -> int:
    with Store.open() as store:
        return _print_record(store.stat(args.id).as_dict(), args.json)


def _stats(args: argparse.Namespace) -> int:
    with Store.open() as store:
        return _print_record(store.stats().as_dict(), args.json)


def _diff(args: argparse.Namespace) -> int:
    with Store.open() as store:
        before = {f.id: f for f in store.list(args.prefix, at=args.since)}
        after = {f.id: f for f in store.list(args.prefix, at=args.until)}
    diff = compare(before, after)
    if args.json:
        print_json(diff.as_dict())
    else:
        for line in diff.lines():
            print(line)
        print(diff.summary())
    return 0


_workers, _processes = bounded(int, 1, 64, "1 to 64 files at once"), bounded(int, 1, 16, "1 to 16 processes")


def _tree_options(p: argparse.ArgumentParser, workers: int) -> None:
    p.add_argument("--workers", type=_workers, default=workers, metavar="N",
                   help=f"a directory or prefix: files at once (1-64, default {workers})")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="store a local file, or every file of a directory, under an ID (deduplicated)")
    p.add_argument("src", metavar="SRC", nargs="?",
                   help="the local regular file to store, or - for stdin (a FIFO, socket or device is refused); "
                        "a directory stores every file below it as ID/<relative path>, skipping unchanged ones")
    p.add_argument("id", metavar="ID", help="the file's ID in the store (any text); for a directory, the prefix")
    p.add_argument("--stdin", action="store_true", help="read standard input instead of SRC (as SRC -)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no summary")
    _tree_options(p, STORE_WORKERS)
    p.add_argument("--processes", type=_processes, default=TREE_PROCESSES, metavar="P",
                   help=f"a directory: client processes for its small files (1-16, default {TREE_PROCESSES}; one "
                        f"when it has fewer than {MIN_PROCESS_FILES} small files a process)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="a directory: follow symlinks below it (linked directories and files; without it a link to "
                        "a file is skipped)")
    p.set_defaults(func=_store)

    p = sub.add_parser("restore", help="write a stored file (or every file under a prefix) back, byte-exact")
    p.add_argument("id", metavar="ID", help="a file's ID; an ID ending in / restores every file under it")
    p.add_argument("dest", metavar="DEST", help="destination path, or - for stdout; for a prefix, a directory")
    p.add_argument("--force", action="store_true", help="overwrite an existing DEST (files below it, for a prefix)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no summary")
    p.add_argument("--json", action="store_true", help="a prefix: print the result as one JSON object")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--version", type=version_argument, metavar="V",
                      help="that version of the file (as 'casstor ls --versions' prints it)")
    when.add_argument("--at", type=time_argument, metavar="TIME",
                      help="the file (or every file under a prefix) as it was at TIME (ISO 8601; no zone: UTC)")
    _tree_options(p, RESTORE_WORKERS)
    p.set_defaults(func=_restore)

    p = sub.add_parser("rm", help="remove a file (its blocks are freed by reclaim)")
    p.add_argument("id", metavar="ID")
    p.set_defaults(func=_rm)

    p = sub.add_parser("ls", help="list stored files")
    p.add_argument("prefix", metavar="PREFIX", nargs="?", default="", help="only IDs starting with PREFIX")
    p.add_argument("--versions", action="store_true",
                   help="PREFIX is one file's ID: its versions, newest first, delete markers included")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(func=_ls)

    p = sub.add_parser("diff", help="what changed under a prefix between two times: files added, removed, changed")
    p.add_argument("prefix", metavar="PREFIX", help="only IDs starting with PREFIX ('' for all)")
    p.add_argument("--from", dest="since", type=time_argument, required=True, metavar="TIME",
                   help="the earlier time (ISO 8601; no zone: UTC)")
    p.add_argument("--to", dest="until", type=time_argument, metavar="TIME", help="the later time (default: now)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_diff)

    p = sub.add_parser("stat", help="show a stored file's committed version")
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_stat)

    p = sub.add_parser("stats", help="store-wide totals: files; logical, unique and stored bytes; dedup and "
                                           "compression ratios")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_stats)
