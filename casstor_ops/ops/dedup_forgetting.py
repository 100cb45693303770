"""What would forgetting free: per retention policy and per snapshot, the exclusive bytes of the versions forget drops.

The ``forgetting`` table of the dedup report, one row per *group* of versions:

* ``forget`` / ``(all)``: every version ``casstor forget`` would drop now;
* ``policy`` / PREFIX: those of them under that policy (the IDs whose longest
  policy prefix it is), and ``policy`` / ``(no policy)``: those of the IDs
  under none (which keep their newest version only);
* ``snapshot`` / NAME: the versions that snapshot alone keeps, i.e. what
  ``casstor snapshot rm NAME`` and a forget would drop (a version two
  snapshots pin is in neither's group: removing one keeps it).

Columns: ``scope``, ``name``, ``prefix``, ``rule`` (the policy's flags, the
snapshot's instant), ``versions`` (delete markers included, as forget counts
them), ``logical_bytes`` (their sizes), and ``exclusive_blocks`` /
``exclusive_bytes`` / ``exclusive_stored_bytes``: the blocks the group's
versions name that no retained version outside the group names, i.e. what
dropping the group and a reclaim would free (as the ``prefixes`` table
defines exclusive, over versions instead of heads). An inline version's
content is its own, freed with its row: it counts in the bytes, as no block
(:mod:`casstor_ops.ops.dedup_stats`). The ``(all)`` row's figures are what
``casstor forget --dry-run`` says it would free; a block shared by the drops
of two policies is exclusive to neither policy row, but is in ``(all)``.

How forget's decision is made here: the policies, snapshots and the grace
(2 x the commit bound) are read on the driver (:class:`ForgetRules`, a few
rows), and :func:`~casstor_ops.store.history.forget.forget_keeps`, forget's
own pure rule, runs in the executors over each ID's version rows (a Python
UDF after a group-by of the ``versions`` table's light columns: one shuffle
of ~60 bytes a version, and 1 + (snapshots over the ID) calls of it per
ID). The groups' versions are joined to their block lists, and the blocks
compared with every retained version's references (one more scan and
shuffle of ``file_blocks`` by hash, as reclaim's plan does).

Example::

    >>> forgetting_table(spark, read_rules(session))             # doctest: +SKIP
       scope         name  prefix          rule  versions  ...  exclusive_bytes  exclusive_stored_bytes

Lazy Spark plans until the ``collect``; Cassandra errors surface there.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import pandas as pd
from cassandra.cluster import Session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from casstor_ops.ops.dedup_blocks import long_sum
from casstor_ops.ops.dedup_report import COLUMNS
from casstor_ops.spark.references import (head_block_lists, is_inline, referenced_blocks, retained_versions,
                                          stored_blocks)
from casstor_ops.spark.session import read_table
from casstor_ops.store.cql.keyspaces import META_KS
from casstor_ops.store.cql.statements import Statements
from casstor_ops.store.history.forget import forget_keeps, grace_micros
from casstor_ops.store.history.policy import Policy, Version
from casstor_ops.store.history.retention import policies
from casstor_ops.store.history.snapshots import Snapshot, snapshots
from casstor_ops.store.namespace.entries import version_micros

ALL, NO_POLICY = "(all)", "(no policy)"
_GROUPS = T.ArrayType(T.StructType([T.StructField("version", T.StringType()), T.StructField("group", T.IntegerType())]))


@dataclass(frozen=True)
class ForgetRules:
    """What forget decides by, at ``now_micros``: the policies, the snapshots and the grace."""

    policies: dict[str, Policy]
    snapshots: list[Snapshot]
    grace_micros: int
    now_micros: int

    def groups(self) -> list[dict]:
        """The table's rows' labels, in order: index 0 is ``(all)``, then the policies, ``(no policy)``, the
        snapshots."""
        return ([{"scope": "forget", "name": ALL, "prefix": "", "rule": ""}]
                + [{"scope": "policy", "name": p, "prefix": p, "rule": rule.describe()}
                   for p, rule in self.policies.items()]
                + [{"scope": "policy", "name": NO_POLICY, "prefix": "", "rule": "--keep-last 1"}]
                + [{"scope": "snapshot", "name": s.name, "prefix": s.prefix, "rule": s.as_dict()["at"]}
                   for s in self.snapshots])

    def groups_of(self, file_id: str, rows: list) -> list[tuple[str, int]]:
        """``(version, group index)`` for each group each of ``file_id``'s versions (rows with ``version``
        and ``deleted``, any order) is in."""
        rows = sorted(rows, key=lambda r: version_micros(uuid.UUID(r.version)), reverse=True)
        versions = [Version(i, version_micros(uuid.UUID(r.version)), bool(r.deleted)) for i, r in enumerate(rows)]
        prefixes = list(self.policies)
        matching = [p for p in prefixes if file_id.startswith(p)]
        prefix = max(matching, key=len) if matching else None  # the longest, as forget's policy_for
        policy_group = 1 + (prefixes.index(prefix) if prefix is not None else len(prefixes))
        pins = {k: s.at_micros for k, s in enumerate(self.snapshots) if file_id.startswith(s.prefix)}

        def keeps(without: int | None = None) -> set:
            return forget_keeps(file_id, versions, self.policies, [at for k, at in pins.items() if k != without],
                                self.now_micros, self.grace_micros)

        keep = keeps()
        found = [(i, g) for i in range(len(rows)) if i not in keep for g in (0, policy_group)]
        first_snapshot = len(prefixes) + 2
        found += [(i, first_snapshot + k) for k in pins for i in keep - keeps(without=k)]
        return [(rows[i].version, g) for i, g in found]


def read_rules(session: Session, now: float | None = None) -> ForgetRules:
    """The rules forget would apply at ``now`` (seconds since 1970; default: the clock's)."""
    st = Statements.for_session(session)
    return ForgetRules(policies(session, st), snapshots(session, st), grace_micros(session),
                       int((time.time() if now is None else now) * 1_000_000))


def grouped_versions(spark: SparkSession, rules: ForgetRules) -> DataFrame:
    """``(id, version, group, size, inline_size, inline_stored)``: each version in each group it is in (module
    docstring); the inline sizes are 0 for a version with a block list."""
    rows = read_table(spark, META_KS, "versions").select("id", "version", "deleted", "size", "blocks",
                                                         "stored_size")
    decide = F.udf(rules.groups_of, _GROUPS)
    groups = (rows.groupBy("id").agg(F.collect_list(F.struct("version", "deleted")).alias("rows"))
              .select("id", F.explode(decide("id", "rows")).alias("g")).select("id", "g.version", "g.group"))
    inline = F.when(is_inline(), F.col("size")).otherwise(F.lit(0))
    inline_stored = F.when(is_inline(), F.coalesce("stored_size", "size")).otherwise(F.lit(0))
    return groups.join(rows.select("id", "version", F.coalesce("size", F.lit(0)).alias("size"),
                                   inline.alias("inline_size"), inline_stored.alias("inline_stored")),
                       ["id", "version"])


def forgetting_table(spark: SparkSession, rules: ForgetRules) -> pd.DataFrame:
    """The ``forgetting`` table (module docstring): a row per group, empty groups as 0."""
    grouped = grouped_versions(spark, rules).persist()
    try:
        per_versions = grouped.groupBy("group").agg(F.count(F.lit(1)).alias("versions"),
                                                    long_sum("size", "logical_bytes"),
                                                    long_sum("inline_size", "inline_size"),
                                                    long_sum("inline_stored", "inline_stored")).collect()
        refs = referenced_blocks(spark, lists=head_block_lists(spark, head_rows=retained_versions(spark)))
        stored = stored_blocks(spark, "stored_size").select(
            "hash", F.coalesce("stored_size", "size").cast("long").alias("stored_bytes"))
        named = (head_block_lists(spark, "group", head_rows=grouped.select("id", "version", "group"))
                 .groupBy("group", "hash").agg(F.count(F.lit(1)).alias("n")))
        exclusive = (named.join(refs, "hash").where(F.col("n") == F.col("refs")).join(stored, "hash", "left")
                     .groupBy("group").agg(F.count(F.lit(1)).alias("exclusive_blocks"),
                                           long_sum("size", "exclusive_bytes"),
                                           long_sum("stored_bytes", "exclusive_stored_bytes")).collect())
    finally:
        grouped.unpersist()
    return _table(rules.groups(), {r.group: r.asDict() for r in per_versions}, {r.group: r.asDict() for r in exclusive})


def _table(groups: list[dict], versions: dict[int, dict], blocks: dict[int, dict]) -> pd.DataFrame:
    rows = []
    for g, label in enumerate(groups):
        v = versions.get(g, {"versions": 0, "logical_bytes": 0, "inline_size": 0, "inline_stored": 0})
        b = blocks.get(g, {"exclusive_blocks": 0, "exclusive_bytes": 0, "exclusive_stored_bytes": 0})
        # An inline version's content goes with its row: exclusive bytes, stored as kept, and no block.
        rows.append({**label, "versions": v["versions"], "logical_bytes": v["logical_bytes"],
                     "exclusive_blocks": b["exclusive_blocks"],
                     "exclusive_bytes": b["exclusive_bytes"] + v["inline_size"],
                     "exclusive_stored_bytes": b["exclusive_stored_bytes"] + v["inline_stored"]})
    return pd.DataFrame(rows, columns=COLUMNS["forgetting"])
