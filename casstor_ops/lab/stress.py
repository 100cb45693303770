"""Running the real cassandra-stress against the casstor tables, and the row-cache switch.

The profiles in ``stress-yaml/`` copy the store's tables (``blocks``,
``existing_blocks``, and a key-only ``existing_blocks_key_only``) into
their own keyspace, ``casstor_stress``, so an experiment never touches a
real store. :func:`run_stress` runs one profile with one ops mix at each
of a list of thread counts (one cassandra-stress process per count: its own
``threads>=a threads<=b`` sweep picks 4, 8, 16, 24 and sleeps 15 s between
steps), keeps each run's raw output next to the results and returns the
parsed summary and per-interval rows (:mod:`casstor_ops.lab.stress_results`).

The cluster is the one casstor itself uses (``connection.endpoint_from_env``:
the local node, started if needed, or ``CASSTOR_NODES``); cassandra-stress
runs on Java 17 at the store's consistency level (``CASSTOR_CONSISTENCY``).
With credentials, cassandra-stress logs in through casstor's
``casstor.auth.StressAuthProvider`` (``java/src``, put in its ``tools/lib`` by
``make setup``), which reads the role and the password file from the
environment of the process: ``-mode password=`` would show the password to
``ps`` and in the tool's printed settings, and cassandra-stress 4.0 has no
``-credentials-file`` (4.1 added it). With ``CASSTOR_SSL_CA`` it connects
through TLS with a truststore derived from it
(:func:`~casstor_ops.cluster.java_tls.truststore_for`). On a secured local
cluster the ``casstor`` role may not create the ``casstor_stress`` keyspace:
run the experiments as its admin role (``docs/security.md``).
Reads only find loaded keys when they draw seeds from the inserted range:
``population=N`` makes inserts write seeds ``1..N`` once each
(``-pop seq=1..N``) and reads draw uniformly from ``1..N``.

Example::

    >>> load = run_stress("existing_blocks.yaml", "insert", population=2000, n=2000, threads=[8])  # doctest: +SKIP
    >>> reads = run_stress("existing_blocks.yaml", "exists_one", population=2000, n=4000,
    ...                    threads=[4, 16])                                       # doctest: +SKIP
    >>> reads.totals[["threads", "op_rate", "p95_ms"]]                           # doctest: +SKIP

Failures raise a one-line :class:`~casstor_ops.errors.CasstorError` naming
the run's log: a missing profile, cassandra-stress exiting non-zero,
printing ``FAILURE``, counting errors, or measuring nothing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from cassandra.cluster import Session

from casstor_ops.cluster import paths as layout
from casstor_ops.cluster.connection import PASSWORD_FILE_SETTING, Endpoint, endpoint_from_env, ensure_running
from casstor_ops.cluster.java_tls import CIPHER_SUITES, TRUSTSTORE_PASSWORD, truststore_for
from casstor_ops.cluster.jvm import java17_home
from casstor_ops.cluster.launcher import LocalCluster
from casstor_ops.errors import CasstorError
from casstor_ops.lab.stress_results import INTERVAL_COLUMNS, SUMMARY_COLUMNS, failure_reason, parse_output
from casstor_ops.store.cql.keyspaces import DATA_KS
from casstor_ops.store.schema import Replication

STRESS_KS = "casstor_stress"
PROFILE_DIR = layout.project_root() / "stress-yaml"
RESULTS_DIR = layout.project_root() / "plots" / "stress"
# profile file -> the table it creates in STRESS_KS
PROFILES = {
    "blocks.yaml": "blocks",
    "existing_blocks.yaml": "existing_blocks",
    "existing_blocks_key_only.yaml": "existing_blocks_key_only",
}
# DDL cannot be prepared: only these tables' caching can be switched.
ROW_CACHE_TABLES = frozenset({(STRESS_KS, t) for t in PROFILES.values()}
                             | {(DATA_KS, "blocks"), (DATA_KS, "existing_blocks")})
RUN_TIMEOUT_S = 900.0
AUTH_PROVIDER = "casstor.auth.StressAuthProvider"  # java/src/casstor/auth, in tools/lib since 'make setup'


def stress_binary() -> Path:
    """The cassandra-stress launcher, as an absolute path (``CASSTOR_CACHE`` may be relative)."""
    script = layout.stress_home().absolute() / "tools" / "bin" / "cassandra-stress"
    if not script.exists():
        raise CasstorError(f"cassandra-stress not found at {script}: run 'make setup'")
    return script


@dataclass
class StressResult:
    """One profile + ops mix, measured at one or more thread counts.

    ``summary`` has a row per thread count and operation (``op == "total"``
    for the whole mix) with columns ``profile``, ``table``, ``ops`` and
    :data:`~casstor_ops.lab.stress_results.SUMMARY_COLUMNS`; ``intervals`` has
    the per-second rows; ``logs`` the raw outputs, one per thread count.
    """

    profile: str
    table: str
    ops: str
    summary: pd.DataFrame
    intervals: pd.DataFrame
    logs: list[Path]

    @property
    def totals(self) -> pd.DataFrame:
        """The whole-mix rows, one per thread count."""
        return self.summary[self.summary.op == "total"].reset_index(drop=True)


def _ops_spec(ops: str | Mapping[str, int]) -> tuple[str, str]:
    """``"exists_one"`` or ``{"insert": 1, "exists_one": 3}`` -> (``ops(...)`` argument, label)."""
    ratios = {ops: 1} if isinstance(ops, str) else dict(ops)
    if not ratios or not all(re.fullmatch(r"\w+", k) and isinstance(v, int) and v > 0 for k, v in ratios.items()):
        raise CasstorError(f"ops {ops!r}: expected a query name or {{name: positive int ratio}}")
    spec = "ops(" + ",".join(f"{k}={v}" for k, v in ratios.items()) + ")"
    label = "+".join(ratios) if len(ratios) > 1 else next(iter(ratios))
    return spec, label


def resolve_profile(profile: str | Path) -> Path:
    """A profile name from ``stress-yaml/`` or a path; absolute (cassandra-stress wants a URI)."""
    path = Path(profile)
    if not path.is_absolute() and not path.exists():
        path = PROFILE_DIR / path
    if not path.is_file():
        raise CasstorError(f"stress profile {profile!r} not found (profiles: {', '.join(sorted(PROFILES))})")
    return path.resolve()


def _profile_table(path: Path) -> str:
    match = re.search(r"^table:\s*(\w+)", path.read_text(), re.MULTILINE)
    if not match:
        raise CasstorError(f"stress profile {path}: no 'table:' line")
    return match.group(1)


def _connection_args(endpoint: Endpoint, jmx_port: int | None) -> list[str]:
    """``-node``, ``-port``, ``-mode`` and (TLS) ``-transport``: no password, only the auth provider's class."""
    node = (["datacenter=" + endpoint.local_dc] if endpoint.local_dc else []) + [",".join(endpoint.hosts)]
    port = [f"native={endpoint.port}"]
    if jmx_port is None and endpoint.embedded:
        jmx_port = LocalCluster().ports.jmx_base
    if jmx_port is not None:  # never the default 7199 for a local cluster: that may be someone else's node
        port.append(f"jmx={jmx_port}")
    mode = ["native", "cql3", "protocolVersion=4"]
    if endpoint.username:
        mode += [f"user={endpoint.username}", f"auth-provider={AUTH_PROVIDER}"]
    # TLSv1.2: the tool's driver 3.6 (netty 4.1.37) never completes a TLS 1.3 handshake on Java 17 (measured:
    # its control connection times out); Cassandra 5.0 accepts both.
    transport = ([] if not endpoint.ssl_ca else
                 ["-transport", f"truststore={truststore_for(endpoint.ssl_ca)}",
                  f"truststore-password={TRUSTSTORE_PASSWORD}", "ssl-protocol=TLSv1.2",
                  f"ssl-ciphers={','.join(CIPHER_SUITES)}"])
    return ["-node", *node, "-port", *port, "-mode", *mode, *transport]


def credentials_env(endpoint: Endpoint) -> dict[str, str]:
    """The environment :data:`AUTH_PROVIDER` reads the credentials from: the role, and its password file (or, when
    the endpoint has a password and no file, the password: an environment is private to the process's user)."""
    if not endpoint.username:
        return {}
    secret = ({PASSWORD_FILE_SETTING: endpoint.password_file} if endpoint.password_file
              else {"CASSTOR_PASSWORD": endpoint.password or ""})
    return {"CASSTOR_USERNAME": endpoint.username, **secret}


def stress_command(profile: Path, ops_spec: str, *, population: int, threads: int, n: int | None,
                   duration_s: int | None, endpoint: Endpoint, hdr_file: Path, warmup: bool = True,
                   consistency: str | None = None, jmx_port: int | None = None) -> list[str]:
    """The cassandra-stress argument list for one run (see :func:`run_stress`).

    Every path in it is absolute: cassandra-stress runs in the results
    directory, where a path relative to the caller's directory names nothing
    (a relative ``hdrfile=`` failed with "No such file or directory").
    """
    if (n is None) == (duration_s is None):
        raise CasstorError("stress run: give exactly one of n (operations) or duration_s")
    if population < 1:
        raise CasstorError(f"stress population {population}: must be at least 1 key")
    inserting_only = re.fullmatch(r"ops\(insert=\d+\)", ops_spec) is not None
    pop = f"seq=1..{population}" if inserting_only else f"dist=uniform(1..{population})"
    count = f"n={n}" if n is not None else f"duration={duration_s}s"
    return [str(stress_binary()), "user", f"profile={Path(profile).absolute()}", ops_spec, count,
            *([] if warmup else ["no-warmup"]), f"cl={consistency or endpoint.consistency}",
            "-pop", pop, "-rate", f"threads={threads}", *_connection_args(endpoint, jmx_port),
            "-log", "interval=1s", f"hdrfile={Path(hdr_file).absolute()}"]


def _run_one(cmd: list[str], log: Path, timeout_s: float, credentials: dict[str, str]) -> str:
    env = {**os.environ, "JAVA_HOME": str(java17_home()), **credentials}
    log.with_suffix(".cmd").write_text(" ".join(cmd) + "\n")
    with open(log, "w") as out, open(log.with_suffix(".err"), "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=log.parent,
                                env=env, start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: only this run's JVM
            proc.wait()
            raise CasstorError(f"cassandra-stress did not finish within {timeout_s:.0f} s and was killed; "
                               f"see {log}") from None
    stdout, stderr = log.read_text(errors="replace"), log.with_suffix(".err").read_text(errors="replace")
    if proc.returncode != 0:
        raise CasstorError(f"cassandra-stress failed (exit {proc.returncode}): "
                           f"{failure_reason(stdout, stderr)[:300]}; see {log}")
    return stdout


def run_stress(profile: str | Path, ops: str | Mapping[str, int], *, population: int,
               n: int | None = None, duration_s: int | None = None, threads: Sequence[int] = (4,),
               endpoint: Endpoint | None = None, results_dir: Path | str | None = None,
               name: str | None = None, warmup: bool = True, consistency: str | None = None,
               jmx_port: int | None = None) -> StressResult:
    """Run cassandra-stress once per thread count; parse and keep its output.

    ``population`` is the number of keys loaded (inserts write seeds 1..N,
    reads draw from 1..N); give ``n`` operations or ``duration_s`` seconds
    per thread count. Raw output goes to ``<results_dir>/<name>/t<threads>.log``
    (with ``.err``, ``.cmd`` and ``.hdr`` beside it); ``results_dir``
    defaults to ``plots/stress``, ``name`` to ``<profile>-<ops>``; a relative
    ``results_dir`` is taken from the current directory. ``jmx_port``: the
    JMX port of the first node (default: the embedded cluster's; none for a
    remote one), where cassandra-stress reads GC figures.
    """
    path = resolve_profile(profile)
    table = _profile_table(path)
    spec, label = _ops_spec(ops)
    if not threads or any(int(t) < 1 for t in threads):
        raise CasstorError(f"threads {list(threads)!r}: expected one or more positive thread counts")
    endpoint = endpoint or endpoint_from_env()
    ensure_running(endpoint)
    run_dir = Path(results_dir or RESULTS_DIR).absolute() / (name or f"{path.stem}-{label}")
    run_dir.mkdir(parents=True, exist_ok=True)
    summaries, intervals, logs = [], [], []
    for count in threads:
        log = run_dir / f"t{count}.log"
        cmd = stress_command(path, spec, population=population, threads=int(count), n=n, duration_s=duration_s,
                             endpoint=endpoint, hdr_file=log.with_suffix(".hdr"), warmup=warmup,
                             consistency=consistency, jmx_port=jmx_port)
        limit = RUN_TIMEOUT_S + (duration_s or 0)
        output = parse_output(_run_one(cmd, log, limit, credentials_env(endpoint)))
        total = output.summary[output.summary.op == "total"]
        if output.failed or total.empty or (total.errors > 0).any():
            errors = int(total.errors.sum()) if not total.empty else 0
            what = "reported FAILURE" if output.failed else (
                f"counted {errors} errors" if errors else "measured nothing")
            raise CasstorError(f"cassandra-stress {label} on {table} at {count} threads {what}; see {log}")
        summaries.append(output.summary)
        intervals.append(output.intervals)
        logs.append(log)
    tag = {"profile": path.name, "table": table, "ops": label}
    summary = pd.concat(summaries, ignore_index=True).assign(**tag)[[*tag, *SUMMARY_COLUMNS]]
    interval = pd.concat(intervals, ignore_index=True).assign(**tag)[[*tag, *INTERVAL_COLUMNS]]
    summary.to_csv(run_dir / "summary.csv", index=False)
    interval.to_csv(run_dir / "intervals.csv", index=False)
    return StressResult(path.name, table, label, summary, interval, logs)


def set_row_cache(session: Session, table: str, enabled: bool, keyspace: str = STRESS_KS) -> None:
    """Cache whole partitions of ``keyspace.table`` in the row cache (or stop); keys stay cached.

    The node's ``row_cache_size`` must be > 0 (the launcher sets 64 MiB).
    Raises :class:`CasstorError` for a table outside :data:`ROW_CACHE_TABLES`.
    """
    if (keyspace, table) not in ROW_CACHE_TABLES:
        allowed = ", ".join(sorted(f"{k}.{t}" for k, t in ROW_CACHE_TABLES))
        raise CasstorError(f"row cache: {keyspace}.{table} is not one of {allowed}")
    rows = "ALL" if enabled else "NONE"
    session.execute(f"ALTER TABLE {keyspace}.{table} WITH caching = "
                    f"{{'keys': 'ALL', 'rows_per_partition': '{rows}'}}")
    session.cluster.control_connection.wait_for_schema_agreement()


def row_cache_enabled(session: Session, table: str, keyspace: str = STRESS_KS) -> bool:
    row = session.execute(session.prepare(
        "SELECT caching FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?"),
        (keyspace, table)).one()
    if row is None:
        raise CasstorError(f"no table {keyspace}.{table}")
    return row.caching.get("rows_per_partition", "NONE") != "NONE"


def drop_stress_keyspace(session: Session) -> None:
    """Remove every stress table (the next run's profile recreates its own)."""
    session.execute(f"DROP KEYSPACE IF EXISTS {STRESS_KS}")
    session.cluster.control_connection.wait_for_schema_agreement()


def create_stress_keyspace(session: Session, replication_factor: int) -> None:
    """An empty stress keyspace replicated ``replication_factor`` times (SimpleStrategy).

    The profiles' own ``keyspace_definition`` (RF 1) is then skipped:
    cassandra-stress creates the keyspace only when it does not exist.
    Raises :class:`CasstorError` for a factor below 1.
    """
    replication = Replication.simple(replication_factor)  # validated: DDL cannot be prepared
    drop_stress_keyspace(session)
    session.execute(f"CREATE KEYSPACE {STRESS_KS} WITH replication = {replication.cql()}")
    session.cluster.control_connection.wait_for_schema_agreement()


def flush_local(endpoint: Endpoint | None = None, cluster: LocalCluster | None = None) -> bool:
    """Flush the stress keyspace's memtables on every node of a local cluster, so reads go to SSTables.

    ``cluster`` defaults to the embedded one of ``endpoint``. Returns False
    (and does nothing) for a remote cluster (``CASSTOR_NODES``): flush it
    with its own nodetool.
    """
    if cluster is None:
        endpoint = endpoint or endpoint_from_env()
        if not endpoint.embedded:
            return False
        cluster = LocalCluster()
    for status in cluster.status():
        if status.state == "up":
            cluster.nodetool("flush", STRESS_KS, node=status.index)
    return True
