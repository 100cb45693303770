"""Which versions of one ID a retention policy keeps: pure functions, restic's semantics, no I/O.

Given an ID's versions (newest first, each with its time in microseconds
since 1970 and whether it is a delete marker), a :class:`Policy` or None,
``now``, the instants of the snapshots over the ID and the grace:

* ``keep_last`` N: the N newest versions;
* ``keep_within`` D: the versions at most D older than the ID's newest
  version (restic: relative to the latest, not to now, so an ID that stopped
  changing keeps its last D of history);
* ``keep_hourly`` / ``daily`` / ``weekly`` / ``monthly`` N: walking newest
  first, the newest version of each of the last N such periods (UTC hours,
  days, ISO weeks, months) that have a version;
* a delete marker counts as a version in every term (it takes a place of
  ``keep_last`` and its period) but keeps nothing itself;
* the newest version is always kept unless it is a delete marker; so an ID
  under no policy keeps its newest version, and nothing after ``rm``;
* a snapshot at ``at`` pins the newest version with a time at or before
  ``at``, unless that is a delete marker;
* the grace keeps a version whose successor is younger than ``grace``
  (``now - grace``), and a newest delete marker as young;
* a delete marker is kept when a version older than it is kept (dropping it
  would make that version the head again).

Example::

    >>> day = 86_400_000_000
    >>> vs = [Version("c", 3 * day, False), Version("b", 2 * day + 1, False), Version("a", 2 * day, False)]
    >>> sorted(kept(vs, Policy(keep_daily=2), now=4 * day))
    ['b', 'c']
    >>> sorted(kept(vs, None, now=4 * day))
    ['c']

Failures: :func:`parse_duration` and :meth:`Policy.checked` raise
:class:`~casstor_ops.errors.CasstorError` with one line for bad input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from casstor_ops.errors import EXIT_USAGE, CasstorError

# restic's letters (m is a month); s for the short durations of tests and caches.
_UNITS = {"y": 365 * 86_400, "m": 30 * 86_400, "w": 7 * 86_400, "d": 86_400, "h": 3_600, "s": 1}
_DURATION = re.compile(r"(\d+)([ymwdhs])")

PERIODS: dict[str, Callable[[datetime], tuple]] = {
    "hourly": lambda t: (t.year, t.month, t.day, t.hour),
    "daily": lambda t: (t.year, t.month, t.day),
    "weekly": lambda t: tuple(t.isocalendar())[:2],
    "monthly": lambda t: (t.year, t.month),
}


def parse_duration(text: str) -> int:
    """Seconds of a duration such as ``1y6m``, ``7d12h`` or ``90s`` (y 365 days, m 30 days, w, d, h, s)."""
    if not text or _DURATION.sub("", text) != "":
        raise CasstorError(f"duration {text!r}: expected e.g. 7d, 12h, 1y6m (units y m w d h s)", EXIT_USAGE)
    return sum(int(n) * _UNITS[unit] for n, unit in _DURATION.findall(text))


def format_duration(seconds: int) -> str:
    """The shortest of :func:`parse_duration`'s spellings of ``seconds``. Example: ``format_duration(90000)`` ->
    ``'1d1h'``."""
    parts = []
    for unit, size in _UNITS.items():
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"


@dataclass(frozen=True)
class Policy:
    """restic's ``forget`` terms; None: the term is not set."""

    keep_last: int | None = None
    keep_within_s: int | None = None
    keep_hourly: int | None = None
    keep_daily: int | None = None
    keep_weekly: int | None = None
    keep_monthly: int | None = None

    def checked(self) -> "Policy":
        """Itself, if it has a term and no term is negative (else a one-line CasstorError)."""
        terms = asdict(self)
        if all(v is None for v in terms.values()):
            raise CasstorError("a retention policy needs at least one --keep-* term", EXIT_USAGE)
        negative = [name for name, v in terms.items() if v is not None and v < 0]
        if negative:
            raise CasstorError(f"{negative[0].replace('_', '-')}: must not be negative", EXIT_USAGE)
        return self

    def row(self) -> tuple:
        return tuple(asdict(self).values())

    def as_dict(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if value is not None}

    def describe(self) -> str:
        """restic's flags. Example: ``Policy(keep_last=3, keep_within_s=86400).describe()`` ->
        ``'--keep-last 3 --keep-within 1d'``."""
        return " ".join(f"--{name.removesuffix('_s').replace('_', '-')} "
                        f"{format_duration(value) if name == 'keep_within_s' else value}"
                        for name, value in self.as_dict().items())


class Version(NamedTuple):
    """One version of an ID: ``key`` (anything; :func:`kept` returns keys), its time, and whether it is a marker."""

    key: Hashable
    micros: int
    deleted: bool


def policy_for(file_id: str, policies: Mapping[str, Policy]) -> Policy | None:
    """The policy of the longest prefix of ``file_id`` that has one; None if none does."""
    matching = [prefix for prefix in policies if file_id.startswith(prefix)]
    return policies[max(matching, key=len)] if matching else None


def _by_terms(versions: Sequence[Version], policy: Policy) -> set[int]:
    """Indexes (newest first) of the versions the policy's terms select, markers included."""
    chosen: set[int] = set(range(min(policy.keep_last or 0, len(versions))))
    if policy.keep_within_s is not None:
        oldest = versions[0].micros - policy.keep_within_s * 1_000_000
        chosen |= {i for i, v in enumerate(versions) if v.micros >= oldest}
    for name, period in PERIODS.items():
        left = getattr(policy, f"keep_{name}") or 0
        last = None
        for i, v in enumerate(versions):
            if left == 0:
                break
            bucket = period(datetime.fromtimestamp(v.micros / 1e6, timezone.utc))
            if bucket != last:
                chosen.add(i)
                last = bucket
                left -= 1
    return chosen


def pinned(versions: Sequence[Version], at_micros: int) -> int | None:
    """The index of the version that was the head at ``at_micros`` (None: none, or a delete marker)."""
    for i, v in enumerate(versions):
        if v.micros <= at_micros:
            return None if v.deleted else i
    return None


def kept(versions: Sequence[Version], policy: Policy | None, now: int, pins: Iterable[int] = (),
         grace: int = 0) -> set[Hashable]:
    """The keys of ``versions`` (newest first) that ``policy`` (None: no policy), the snapshots at ``pins``
    (microseconds) and a grace of ``grace`` microseconds keep at ``now`` (microseconds)."""
    if not versions:
        return set()
    chosen = _by_terms(versions, policy) if policy is not None else set()
    chosen.add(0)
    chosen |= {i for i in (pinned(versions, at) for at in pins) if i is not None}
    keep = {i for i in chosen if not versions[i].deleted}
    young = now - grace
    keep |= {i for i in range(1, len(versions)) if versions[i - 1].micros > young}
    if versions[0].deleted and versions[0].micros > young:
        keep.add(0)
    oldest_kept = max(keep, default=-1)
    keep |= {i for i in range(oldest_kept) if versions[i].deleted}
    return {versions[i].key for i in keep}
