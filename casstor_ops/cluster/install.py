"""``make setup``'s second half: server jars, cassandra-stress, casstor's Java auth hooks, Spark config.

Run as ``.venv/bin/python -m casstor_ops.cluster.install`` (the Makefile does, after
creating the venv). Each step is skipped when its result is already in the
cache, so a second run takes about a second. Downloads go to a temporary
directory and are renamed into place, so an interrupted run never leaves a
half-filled cache that later runs would trust.

Fails with a one-line :class:`~casstor_ops.errors.CasstorError` when Maven or
Java 17 is missing, Maven Central cannot be reached, or a tool hangs
(:mod:`.tools`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from casstor_ops.cluster import paths as layout
from casstor_ops.errors import CasstorError
from casstor_ops.cluster.jvm import java17_home
from casstor_ops.cluster.tools import run_tool

MVN_TIMEOUT_S = 1800    # a download of ~70 MB of jars on a slow link
JAVAC_TIMEOUT_S = 600
_ONE_DEPENDENCY_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>casstor</groupId><artifactId>{artifact}-runtime</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""


def _mvn(args: list[str], cwd: Path) -> None:
    env = {**os.environ, "JAVA_HOME": str(java17_home())}
    run_tool(["mvn", "-B", "-q", *args], f"mvn {args[0]}", MVN_TIMEOUT_S, cwd=cwd, env=env,
             install="apt-get install maven")


def _install_runtime_jars(group: str, artifact: str, version: str, lib: Path) -> Path:
    """Copy ``group:artifact:version`` and its runtime dependencies into ``lib`` (renamed into place when complete)."""
    if (lib / f"{artifact}-{version}.jar").exists():
        return lib
    print(f"setup: downloading {artifact} {version} jars from Maven Central")
    lib.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
        (Path(tmp) / "pom.xml").write_text(_ONE_DEPENDENCY_POM.format(group=group, artifact=artifact, version=version))
        _mvn(["dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory=lib"], Path(tmp))
        (Path(tmp) / "lib").rename(lib)
    return lib


def install_cassandra_jars() -> Path:
    """Copy ``cassandra-all`` and its runtime dependencies into the cache."""
    return _install_runtime_jars("org.apache.cassandra", "cassandra-all", layout.CASSANDRA_VERSION,
                                 layout.cassandra_lib_dir())


def install_s3proxy() -> Path:
    """Copy S3Proxy (a real S3 server; the tests run it on the filesystem backend) and its dependencies into the
    cache: 43 MB, about 2 minutes on a loaded machine, so fetched by the first test that needs it, not by setup."""
    return _install_runtime_jars("org.gaul", "s3proxy", layout.S3PROXY_VERSION, layout.s3proxy_lib_dir())


def install_stress() -> Path:
    """Unpack the real cassandra-stress (4.0-alpha2 tools) and add jaxb-api for ``-log hdrfile=``."""
    home = layout.stress_home()
    jaxb = home / "tools" / "lib" / "jaxb-api-2.3.1.jar"
    if jaxb.exists():
        return home
    print("setup: downloading cassandra-stress (apache-cassandra 4.0-alpha2 tools) from Maven Central")
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home.parent) as tmp:
        _mvn(["dependency:unpack", f"-Dartifact={layout.STRESS_DIST}", f"-DoutputDirectory={tmp}/out"], Path(tmp))
        unpacked = Path(tmp) / "out" / layout.STRESS_DIR_NAME
        _mvn(["dependency:copy", f"-Dartifact={layout.JAXB_API}",
              f"-DoutputDirectory={unpacked / 'tools' / 'lib'}"], Path(tmp))
        if home.exists():
            shutil.rmtree(home)
        unpacked.rename(home)
    return home


def install_auth_jar(connector_jars: list[Path]) -> Path:
    """Compile ``java/src`` (the Spark connector's and cassandra-stress's password-file hooks) into the cache and
    put the jar among cassandra-stress's libraries; the jar.

    Its name carries a digest of the sources, so an edited source is compiled again.
    """
    sources = sorted((layout.project_root() / "java" / "src").rglob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    jar = layout.cache_dir() / f"casstor-auth-{digest}.jar"
    if not jar.exists():
        print("setup: compiling casstor's Java auth hooks (java/src)")
        with tempfile.TemporaryDirectory(dir=layout.cache_dir()) as tmp:
            _javac(sources, _auth_classpath(connector_jars), Path(tmp) / "classes")
            with zipfile.ZipFile(Path(tmp) / "auth.jar", "w") as out:
                for path in sorted((Path(tmp) / "classes").rglob("*.class")):
                    out.write(path, path.relative_to(Path(tmp) / "classes").as_posix())
            (Path(tmp) / "auth.jar").rename(jar)
    shutil.copyfile(jar, layout.stress_home() / "tools" / "lib" / "casstor-auth.jar")
    return jar


def _auth_classpath(connector_jars: list[Path]) -> list[Path]:
    """The jars the hooks compile against: Spark core and utils, Scala, the connector and both drivers."""
    spark_jars = spark_conf_dir().parent / "jars"
    return [*spark_jars.glob("spark-core_*.jar"), *spark_jars.glob("spark-common-utils_*.jar"),
            *spark_jars.glob("scala-library-*.jar"),
            *(j for j in connector_jars if "spark-cassandra-connector_" in j.name or "java-driver-core" in j.name),
            *(layout.stress_home() / "lib").glob("cassandra-driver-core-*.jar")]


def _javac(sources: list[Path], classpath: list[Path], out: Path) -> None:
    javac = java17_home() / "bin" / "javac"
    run_tool([str(javac), "--release", "11", "-nowarn", "-d", str(out), "-cp", ":".join(map(str, classpath)),
              *map(str, sources)], "javac of java/src", JAVAC_TIMEOUT_S,
             install="apt-get install openjdk-17-jdk-headless")


def spark_conf_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "conf"


def write_spark_defaults(connector_jars: list[Path] | None) -> Path:
    """Make plain ``spark-submit`` and notebook sessions get the connector and the venv's Python.

    Once the connector is resolved, its jars (and casstor's auth hooks) are
    named directly (``spark.jars``): no Ivy resolution and no Ivy report at
    every start. The driver's address is not pinned here: a remote master's
    executors must reach the driver, so :mod:`casstor_ops.spark.session` keeps
    it on loopback for local masters only.
    """
    conf = spark_conf_dir()
    conf.mkdir(exist_ok=True)
    python = sys.executable
    jars = (f"spark.jars {','.join(str(j) for j in connector_jars)}\n" if connector_jars else
            f"spark.jars.packages {layout.SPARK_CONNECTOR}\nspark.jars.ivy {layout.ivy_dir()}\n")
    (conf / "spark-defaults.conf").write_text(
        "# Written by casstor's 'make setup'.\n"
        + jars +
        "spark.sql.extensions com.datastax.spark.connector.CassandraSparkExtensions\n"
        f"spark.pyspark.python {python}\n"
        f"spark.pyspark.driver.python {python}\n"
        "spark.sql.shuffle.partitions 8\n"
        "spark.ui.showConsoleProgress false\n"
    )
    (conf / "spark-env.sh").write_text(
        "# Written by casstor's 'make setup'.\n"
        f"export JAVA_HOME={java17_home()}\n"
        f"export PYSPARK_PYTHON={python}\n"
    )
    (conf / "log4j2.properties").write_text(
        "# Written by casstor's 'make setup': Spark's INFO chatter hides job output.\n"
        "rootLogger.level = warn\n"
        "rootLogger.appenderRef.stdout.ref = console\n"
        "appender.console.type = Console\n"
        "appender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n"
        "logger.ivy.name = org.apache.spark.deploy\n"
        "logger.ivy.level = error\n"
        "# Each failed task attempt's WARN carries the executor's traceback and Java frames; a job that fails\n"
        "# reports its cause itself (one casstor: line when the executors are not set up).\n"
        "logger.tasks.name = org.apache.spark.scheduler.TaskSetManager\n"
        "logger.tasks.level = error\n"
        "# Java driver 4.18 warns of a NullPointerException closing a TLS session that has no client keystore.\n"
        "logger.tlsclose.name = com.datastax.oss.driver.internal.core.session.DefaultSession\n"
        "logger.tlsclose.filter.npe.type = RegexFilter\n"
        "logger.tlsclose.filter.npe.regex = .*Error while closing .*JdkSslHandlerFactory.*\n"
        "logger.tlsclose.filter.npe.onMatch = DENY\n"
        "logger.tlsclose.filter.npe.onMismatch = NEUTRAL\n"
    )
    return conf


def pin_spark_scripts_python() -> None:
    """Make ``.venv/bin/spark-submit`` work from any shell, venv activated or not.

    pyspark's ``find-spark-home`` runs ``find_spark_home.py`` with
    ``$PYSPARK_PYTHON`` or else a bare ``python3``: outside the venv that is a
    Python without pyspark, and spark-submit fails with ``/bin/spark-class:
    No such file``. Its default becomes this venv's Python.
    """
    script = Path(sys.executable).parent / "find-spark-home"
    text = script.read_text()
    pinned = text.replace('"${PYSPARK_PYTHON:-"python3"}"', f'"${{PYSPARK_PYTHON:-"{sys.executable}"}}"')
    if pinned != text:
        script.write_text(pinned)


def resolve_spark_connector() -> list[Path]:
    """Resolve the connector into the Ivy cache once (by starting a local session); its jars."""
    jars_dir = layout.ivy_dir() / "jars"
    marker = jars_dir / "com.datastax.spark_spark-cassandra-connector_2.12-3.5.1.jar"
    if marker.exists():
        return sorted(jars_dir.glob("*.jar"))
    write_spark_defaults(None)
    print(f"setup: resolving {layout.SPARK_CONNECTOR} from Maven Central")
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    spark.stop()
    if not marker.exists():
        raise CasstorError(f"Spark did not resolve {layout.SPARK_CONNECTOR} into {layout.ivy_dir()}")
    return sorted(jars_dir.glob("*.jar"))


def main() -> int:
    try:
        install_cassandra_jars()
        install_stress()
        connector_jars = resolve_spark_connector()
        write_spark_defaults([*connector_jars, install_auth_jar(connector_jars)])
        pin_spark_scripts_python()
    except CasstorError as err:
        print(f"setup: {err}", file=sys.stderr)
        return err.exit_code
    print(f"setup: ready (cache {layout.cache_dir()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
