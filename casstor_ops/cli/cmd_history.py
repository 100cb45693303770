"""``casstor retention | snapshot | snapshots | forget``: what history is kept, thin over the Store facade.

Example::

    $ casstor retention set backups/ --keep-daily 7 --keep-weekly 4 --keep-within 2d
    $ casstor retention show --json
    $ casstor snapshot photos/ --name before-cleanup
    $ casstor snapshots
    $ casstor forget --dry-run backups/       # what would go, and what it would free
    $ casstor snapshot rm before-cleanup

Bad input (no ``--keep-*`` term, a bad duration, an unknown prefix or
snapshot, a snapshot name taken) is one ``casstor:`` line and a non-zero exit.
"""

from __future__ import annotations

import argparse

from casstor_ops.cli.args import positive_int
from casstor_ops.cli.output import print_json, print_listing
from casstor_ops.errors import EXIT_USAGE, CasstorError
from casstor_ops.store.api import Store
from casstor_ops.store.history.policy import PERIODS, Policy, parse_duration


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except CasstorError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _retention_set(args: argparse.Namespace) -> int:
    policy = Policy(args.keep_last, args.keep_within, *(getattr(args, f"keep_{p}") for p in PERIODS)).checked()
    with Store.open() as store:
        store.set_retention(args.prefix, policy)
    print(f"retention {args.prefix!r}: {policy.describe()}")
    return 0


def _retention_show(args: argparse.Namespace) -> int:
    with Store.open() as store:
        policies = store.retention()
    return print_listing(policies.items(), lambda pair: {"prefix": pair[0], **pair[1].as_dict()},
                         lambda pair: f"{pair[0]!r}: {pair[1].describe()}", args.json)


def _retention_rm(args: argparse.Namespace) -> int:
    with Store.open() as store:
        store.remove_retention(args.prefix)
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    """``snapshot PREFIX [--name NAME]`` or ``snapshot rm NAME``."""
    if args.words[0] == "rm" and len(args.words) == 2:
        with Store.open() as store:
            store.remove_snapshot(args.words[1])
        return 0
    if len(args.words) != 1:
        raise CasstorError("snapshot: give PREFIX [--name NAME], or rm NAME", EXIT_USAGE)
    with Store.open() as store:
        snapshot = store.snapshot(args.words[0], args.name)
    print(f"snapshot {snapshot.name!r} of {snapshot.prefix!r} at {snapshot.as_dict()['at']}")
    return 0


def _snapshots(args: argparse.Namespace) -> int:
    with Store.open() as store:
        found = [s.as_dict() for s in store.snapshots()]
    return print_listing(found, dict, lambda s: f"{s['name']}  {s['at']}  {s['prefix']!r}", args.json)


def _forget(args: argparse.Namespace) -> int:
    with Store.open() as store:
        report = store.forget(args.prefix, dry_run=args.dry_run)
    if args.json:
        print_json(report.as_dict())
    else:
        print(report.table())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retention", help="retention policies per prefix: which versions forget keeps")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=type(p))
    q = actions.add_parser("set", help="set a prefix's policy (restic's terms; replaces its previous one)")
    q.add_argument("prefix", metavar="PREFIX", help="the IDs it applies to ('' for all; the longest prefix wins)")
    q.add_argument("--keep-last", type=positive_int, metavar="N", help="the N newest versions")
    q.add_argument("--keep-within", type=_duration, metavar="DURATION",
                   help="versions at most DURATION older than the newest (e.g. 7d, 12h, 1y6m)")
    for period in PERIODS:
        q.add_argument(f"--keep-{period}", type=positive_int, metavar="N",
                       help=f"the newest version of each of the last N {period} periods (UTC) with one")
    q.set_defaults(func=_retention_set)
    q = actions.add_parser("show", help="list the policies")
    q.add_argument("--json", action="store_true", help="print a JSON array")
    q.set_defaults(func=_retention_show)
    q = actions.add_parser("rm", help="drop a prefix's policy")
    q.add_argument("prefix", metavar="PREFIX")
    q.set_defaults(func=_retention_rm)

    p = sub.add_parser("snapshot", help="pin the versions under PREFIX as they are now (or: snapshot rm NAME)")
    p.add_argument("words", metavar="PREFIX | rm NAME", nargs="+")
    p.add_argument("--name", help="the snapshot's name (default: the instant, ISO 8601)")
    p.set_defaults(func=_snapshot)

    p = sub.add_parser("snapshots", help="list the snapshots")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(func=_snapshots)

    p = sub.add_parser("forget", help="drop the versions no retention policy or snapshot keeps (reclaim frees "
                                      "their blocks)")
    p.add_argument("prefix", metavar="PREFIX", nargs="?", help="only IDs under PREFIX (default: the whole store)")
    p.add_argument("--dry-run", action="store_true", help="print what would go and what it would free; drop nothing")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=_forget)
