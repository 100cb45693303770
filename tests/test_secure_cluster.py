"""A secured local cluster (``casstor cluster start --secure``) used by both clients as its ``casstor`` role.

One real node per module, on its own ports (``SECURE_PORTS``), started through the CLI as a user would, with
the export lines it prints as the clients' environment. A sampler reads every process's command line
(``/proc/*/cmdline``) from before the start to the end of the module, so the last test can check that the
password never appeared on one, nor in any file the run wrote. The Spark jobs and cassandra-stress are
``slow`` (``make test-all``); the rest runs in ``make test``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cassandra import Unauthorized

from casstor_ops.cluster.connection import Endpoint, connect
from casstor_ops.cluster.secure_home import ADMIN_ROLE, CLIENT_ROLE, SecureHome
from casstor_ops.errors import EXIT_AUTH, EXIT_UNREACHABLE, CasstorError
from casstor_ops.lab.stress import drop_stress_keyspace, run_stress

from .support import SECURE_PORTS, run_casstor, spark_submit


class CommandLines:
    """Every distinct process command line seen while running, sampled from /proc every 50 ms."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            for proc in Path("/proc").iterdir():
                try:
                    self.seen.add((proc / "cmdline").read_bytes())
                except OSError:  # not a process directory, or the process just ended
                    pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Secured:
    home: Path                 # CASSTOR_HOME of the secured cluster
    exports: dict[str, str]    # the client settings the start printed
    env: dict[str, str]        # the environment of the tests' commands: the node's settings and the exports
    start_out: str             # what the start printed: export lines on stdout, progress on stderr
    outputs: Path              # where the tests keep job outputs, reports and event logs
    command_lines: CommandLines
    printed: list[str] = field(default_factory=list)  # every output of every command the tests ran

    @property
    def files(self) -> SecureHome:
        return SecureHome(self.home / "cluster")

    def casstor(self, *args: str, env: dict[str, str] | None = None, timeout: float = 600) \
            -> subprocess.CompletedProcess:
        run = run_casstor(*args, env={**self.env, **(env or {})}, timeout=timeout)
        self.printed.append((run.stdout + run.stderr).decode(errors="replace"))
        return run

    def spark_job(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
        events = self.outputs / "spark-events"
        events.mkdir(exist_ok=True)
        code, out = spark_submit("--verbose", "--conf", "spark.eventLog.enabled=true",
                                 "--conf", f"spark.eventLog.dir=file://{events}", *args,
                                 env={**self.env, **(env or {})})
        self.printed.append(out)
        return code, out


def _exports(stdout: str) -> dict[str, str]:
    """The variables of ``export NAME=VALUE`` lines (``unset`` lines skipped), values unquoted as a shell would."""
    pairs = [shlex.split(line)[1].split("=", 1) for line in stdout.splitlines() if line.startswith("export ")]
    return dict(pairs)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Secured:
    """The secured node, started with ``casstor cluster start --secure`` (512 MiB heap), stopped at the end."""
    home = tmp_path_factory.mktemp("secure-home")
    node_env = {"CASSTOR_HOME": str(home), "CASSTOR_CQL_PORT": str(SECURE_PORTS.cql),
                "CASSTOR_STORAGE_PORT": str(SECURE_PORTS.storage), "CASSTOR_JMX_PORT": str(SECURE_PORTS.jmx_base),
                "CASSTOR_HEAP_MB": "512", "CASSTOR_NODES": "", "CASSTOR_PASSWORD": ""}
    sampler = CommandLines()
    try:
        start = run_casstor("cluster", "start", "--secure", env=node_env, timeout=600)
        printed = start.stdout.decode() + start.stderr.decode()
        assert start.returncode == 0, printed
        exports = _exports(start.stdout.decode())
        yield Secured(home, exports, {**node_env, **exports}, printed, tmp_path_factory.mktemp("secure-outputs"),
                      sampler, [printed])
    finally:
        run_casstor("cluster", "stop", env=node_env, timeout=300)
        sampler.stop()


def _passwords(secured: Secured) -> dict[str, bytes]:
    return {role: secured.files.password_file(role).read_bytes().strip() for role in (CLIENT_ROLE, ADMIN_ROLE)}


def _role_session(secured: Secured, role: str, password_file: Path | None = None, password: str | None = None):
    endpoint = Endpoint((secured.env["CASSTOR_NODES"],), int(secured.env["CASSTOR_PORT"]), False, role, password,
                        secured.env["CASSTOR_SSL_CA"], password_file=str(password_file) if password_file else None)
    return connect(endpoint, start=False)


def test_start_prints_exports_and_keeps_secrets_private(secured: Secured) -> None:
    """Checks the export lines (eval-able, the casstor role, its password file, the CA), that the progress went
    to stderr, and the modes: node, TLS and credential directories 0700, keys and password files 0600."""
    env = secured.exports
    assert set(env) == {"CASSTOR_NODES", "CASSTOR_PORT", "CASSTOR_USERNAME", "CASSTOR_PASSWORD_FILE", "CASSTOR_SSL_CA"}
    assert (env["CASSTOR_NODES"], env["CASSTOR_PORT"], env["CASSTOR_USERNAME"]) == \
        ("127.0.0.1", str(SECURE_PORTS.cql), CLIENT_ROLE)
    assert env["CASSTOR_PASSWORD_FILE"] == str(secured.files.password_file(CLIENT_ROLE))
    assert env["CASSTOR_SSL_CA"] == str(secured.files.ca_cert)
    assert "node1 (127.0.0.1) up" in secured.start_out and "replacing the default superuser" in secured.start_out
    files = secured.files
    node = files.home / "node1"
    for directory in (files.home, files.tls_dir, files.credentials_dir, node, node / "data", node / "logs",
                      node / "conf"):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    for secret in (files.ca_key, files.node_keystore(1), files.password_file(CLIENT_ROLE),
                   files.password_file(ADMIN_ROLE)):
        assert secret.stat().st_mode & 0o777 == 0o600, secret


def test_init_store_restore_as_the_casstor_role(secured: Secured, tmp_path: Path) -> None:
    """Checks `casstor init` works for the casstor role (its keyspaces exist, it makes the tables), then a store
    and a byte-exact restore, all through TLS with the password file."""
    init = secured.casstor("init")
    assert init.returncode == 0, init.stderr
    source = tmp_path / "f.bin"
    source.write_bytes(os.urandom(300_000) * 3)
    assert secured.casstor("store", str(source), "secure/f.bin", "--quiet").returncode == 0
    restored = secured.casstor("restore", "secure/f.bin", str(tmp_path / "back.bin"), "--quiet")
    assert restored.returncode == 0, restored.stderr
    assert (tmp_path / "back.bin").read_bytes() == source.read_bytes()


def test_casstor_role_may_use_its_keyspaces_and_nothing_else(secured: Secured) -> None:
    """Injects requests outside the two keyspaces (another keyspace, the roles table, a DROP, a grant); checks each
    is Unauthorized, and that the default superuser cassandra/cassandra no longer logs in."""
    session = _role_session(secured, CLIENT_ROLE, secured.files.password_file(CLIENT_ROLE))
    try:
        for statement in ("CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', "
                          "'replication_factor': 1}",
                          "SELECT role FROM system_auth.roles", "DROP KEYSPACE casstor_meta",
                          f"GRANT SELECT ON KEYSPACE casstor_meta TO {ADMIN_ROLE}", "CREATE ROLE intruder"):
            with pytest.raises(Unauthorized):
                session.execute(statement)
        session.execute("SELECT id FROM casstor_meta.versions LIMIT 1")
    finally:
        session.cluster.shutdown()
    with pytest.raises(CasstorError) as refused:
        _role_session(secured, "cassandra", password="cassandra")
    assert refused.value.exit_code == EXIT_AUTH


def test_wrong_password_untrusted_certificate_and_plain_text_are_one_line_each(secured: Secured,
                                                                               tmp_path: Path) -> None:
    """Injects a wrong password (a 0600 file), a CA file of another CA, and a client without TLS; checks one
    `casstor:` line each with EXIT_AUTH, EXIT_UNREACHABLE and EXIT_UNREACHABLE, and the fix each names."""
    wrong = tmp_path / "wrong.password"
    wrong.write_text("not-the-password\n")
    wrong.chmod(0o600)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-noenc", "-keyout", str(tmp_path / "other.key"), "-out", str(tmp_path / "other.crt"),
                    "-days", "2", "-subj", "/CN=another CA"], check=True, capture_output=True, timeout=120)
    cases = [({"CASSTOR_PASSWORD_FILE": str(wrong)}, EXIT_AUTH, "refused the credentials"),
             ({"CASSTOR_SSL_CA": str(tmp_path / "other.crt")}, EXIT_UNREACHABLE, "certificate is not trusted"),
             ({"CASSTOR_SSL_CA": ""}, EXIT_UNREACHABLE, "if the nodes accept TLS clients only, set CASSTOR_SSL_CA")]
    for env, code, fix in cases:
        run = secured.casstor("ls", env=env)
        lines = run.stderr.decode().splitlines()
        assert (run.returncode, len(lines)) == (code, 1), run.stderr
        assert lines[0].startswith("casstor: ") and fix in lines[0]


def test_secure_is_refused_on_a_running_plain_cluster(local_cluster, casstor_home: Path) -> None:
    """Injects --secure on the session's running plain node; checks one line, exit 1, and the node untouched."""
    run = run_casstor("cluster", "start", "--secure", env={"CASSTOR_HOME": str(casstor_home)})
    assert run.returncode == 1 and run.stderr.decode().count("\n") == 1, run.stderr
    assert b"is running without --secure: stop it" in run.stderr
    assert local_cluster.is_up() and not (casstor_home / "cluster" / "tls").exists()


@pytest.fixture(scope="module")
def ingested(secured: Secured, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """A small tree with shared blocks, ingested by jobs/ingest.py (with --report) as the casstor role: the tree,
    the job's exit status and output."""
    assert secured.casstor("init").returncode == 0
    tree = tmp_path_factory.mktemp("secure-tree")
    (tree / "d").mkdir()
    shared = os.urandom(200_000)
    for i in range(4):
        (tree / "d" / f"{i}.bin").write_bytes(shared + os.urandom(50_000))
    code, out = secured.spark_job("jobs/ingest.py", str(tree), "--prefix", "ingested/",
                                  "--report", str(secured.outputs / "ingest.json"))
    return tree, code, out


@pytest.mark.slow
def test_spark_ingest_through_tls_with_the_password_file(secured: Secured, ingested, tmp_path: Path) -> None:
    """Checks jobs/ingest.py through spark-submit stored every file (its report says so), one restores byte-exact,
    and the driver's TLS warning on close is filtered from the job's output."""
    tree, code, out = ingested
    assert code == 0, out
    report = json.loads((secured.outputs / "ingest.json").read_text())
    assert sorted(f["status"] for f in report["files"]) == ["stored"] * 4
    back = secured.casstor("restore", "ingested/d/3.bin", str(tmp_path / "3.bin"), "--quiet")
    assert back.returncode == 0 and (tmp_path / "3.bin").read_bytes() == (tree / "d" / "3.bin").read_bytes()
    assert "JdkSslHandlerFactory" not in out


@pytest.mark.slow
def test_spark_dedup_stats_through_tls(secured: Secured, ingested) -> None:
    """Checks jobs/dedup_stats.py reads the tables through the connector (TLS, password file) and writes its report."""
    code, out = secured.spark_job("jobs/dedup_stats.py", "--out", str(secured.outputs / "plots"))
    assert code == 0 and "casstor dedup report" in out, out
    assert any((secured.outputs / "plots").iterdir())


@pytest.mark.slow
def test_spark_reclaim_through_tls(secured: Secured, ingested, tmp_path: Path) -> None:
    """Removes one ingested file, runs jobs/reclaim.py; checks it succeeds and the other files still restore."""
    tree = ingested[0]
    assert secured.casstor("rm", "ingested/d/0.bin").returncode == 0
    code, out = secured.spark_job("jobs/reclaim.py")
    assert code == 0, out
    back = secured.casstor("restore", "ingested/d/1.bin", str(tmp_path / "1.bin"), "--quiet")
    assert back.returncode == 0 and (tmp_path / "1.bin").read_bytes() == (tree / "d" / "1.bin").read_bytes()


@pytest.mark.slow
def test_a_spark_job_with_a_wrong_password_is_one_line(secured: Secured, tmp_path: Path) -> None:
    """Injects a wrong password file into a Spark job; checks exit EXIT_AUTH and its one `casstor:` line."""
    wrong = tmp_path / "wrong.password"
    wrong.write_text("not-the-password\n")
    wrong.chmod(0o600)
    code, out = secured.spark_job("jobs/dedup_stats.py", env={"CASSTOR_PASSWORD_FILE": str(wrong)})
    casstor_lines = [line for line in out.splitlines() if line.startswith("casstor:")]
    assert code == EXIT_AUTH and len(casstor_lines) == 1 and "refused the credentials" in casstor_lines[0], out


@pytest.mark.slow
def test_stress_through_tls_as_the_admin(secured: Secured) -> None:
    """Runs cassandra-stress (a short insert) through TLS as the admin role, whose password is read from its file by
    casstor's auth provider; checks it measured every insert (the command-line check is the last test's)."""
    admin = Endpoint(("127.0.0.1",), SECURE_PORTS.cql, False, ADMIN_ROLE, ssl_ca=str(secured.files.ca_cert),
                     password_file=str(secured.files.password_file(ADMIN_ROLE)))
    result = run_stress("existing_blocks.yaml", "insert", population=300, n=300, threads=[2], endpoint=admin,
                        results_dir=secured.outputs / "stress")
    assert result.totals.iloc[0].partitions == 300
    session = connect(admin, start=False)
    try:
        drop_stress_keyspace(session)
    finally:
        session.cluster.shutdown()


@pytest.mark.slow
def test_a_restart_without_the_flag_stays_secure(secured: Secured) -> None:
    """Stops the node and starts it with plain `cluster start`; checks the exports again, TLS and passwords still
    required (a plain-text client is refused), and the casstor role still works."""
    node_env = {"CASSTOR_NODES": "", "CASSTOR_PASSWORD_FILE": ""}
    assert secured.casstor("init").returncode == 0
    assert secured.casstor("cluster", "stop", env=node_env).returncode == 0
    again = secured.casstor("cluster", "start", env=node_env)
    assert again.returncode == 0 and _exports(again.stdout.decode()) == secured.exports, again.stderr
    assert secured.casstor("ls", env={"CASSTOR_SSL_CA": ""}).returncode == EXIT_UNREACHABLE
    assert secured.casstor("ls").returncode == 0


def test_no_password_in_logs_outputs_or_command_lines(secured: Secured) -> None:
    """Greps every file of the secured home but the password files (node logs, data, configuration), every job
    output, report, plot, event log and stress log, everything the commands printed, and every process command
    line sampled during the module, for both roles' passwords; none may hold one. The sources are checked to be
    there, so the grep is not vacuous (with the slow tests: the event log and the spark-submit and
    cassandra-stress command lines)."""
    passwords = _passwords(secured)
    secrets = {secured.files.password_file(role) for role in passwords}
    files = [p for root in (secured.home, secured.outputs) for p in root.rglob("*") if p.is_file() and p not in secrets]
    assert any(p.name == "system.log" and p.stat().st_size > 0 for p in files)
    leaks = [(str(p), role) for p in files for role, pw in passwords.items() if pw in p.read_bytes()]
    leaks += [(line[:200], role) for line in secured.printed for role, pw in passwords.items() if pw.decode() in line]
    lines = secured.command_lines.seen
    leaks += [(line[:200].decode(errors="replace"), role) for line in lines for role, pw in passwords.items()
              if pw in line]
    assert leaks == []
    assert any(b"--secure" in line for line in lines)
    events = list((secured.outputs / "spark-events").glob("*"))
    if events:  # the slow Spark jobs ran: their logged configuration names the password file, not the password
        logged = b"".join(p.read_bytes() for p in events)
        assert b"spark.casstor.auth.passwordFile" in logged and b"spark.cassandra.auth.password" not in logged
        assert any(b"org.apache.spark.deploy.SparkSubmit" in line for line in lines)
        assert any(b"org.apache.cassandra.stress.Stress" in line for line in lines)
