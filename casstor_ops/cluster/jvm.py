"""Finding Java 17 and the module flags Cassandra 5.0 needs on it.

Cassandra 5.0 runs on Java 11 or 17; Java 25 fails ("Setting a system-wide
Policy object is not supported"). The flags mirror Cassandra 5.0's
``conf/jvm17-server.options``: without them the server and nodetool die of
``IllegalAccessException`` in reflection-heavy code.

Example::

    >>> java = find_java17()                  # doctest: +SKIP
    >>> [str(java), *JAVA17_MODULE_FLAGS, "-version"]   # doctest: +SKIP

Raises :class:`~casstor_ops.errors.CasstorError` when no Java 17 is found.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from casstor_ops.errors import CasstorError

_EXPORTS = [
    "java.base/jdk.internal.misc",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
    "java.base/java.lang.ref",
    "jdk.unsupported/sun.misc",
    "jdk.compiler/com.sun.tools.javac.file",
    "jdk.attach/sun.tools.attach",
]
_OPENS = [
    "java.base/java.lang.module",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar",
    "jdk.management/com.sun.management.internal",
    "java.base/sun.nio.ch",
    "java.base/java.io",
    "java.base/java.lang.reflect",
    "jdk.compiler/com.sun.tools.javac",
    "java.base/java.lang",
    "java.base/java.util",
]

JAVA17_MODULE_FLAGS: list[str] = [f"--add-exports={m}=ALL-UNNAMED" for m in _EXPORTS] + [
    f"--add-opens={m}=ALL-UNNAMED" for m in _OPENS
]

_CANDIDATE_HOMES = ["/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/java-17-openjdk-arm64"]


def _major_version(java: Path) -> int | None:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    # 'openjdk version "17.0.15" 2025-04-15' -> 17
    for token in out.split('"')[1:2]:
        head = token.split(".")[0]
        return int(head) if head.isdigit() else None
    return None


@functools.cache
def find_java17() -> Path:
    """Return the ``java`` binary of a Java 17 installation.

    Looks at ``$JAVA_HOME``, the Debian location, then ``java`` on ``PATH``.
    """
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    candidates += [Path(h) / "bin" / "java" for h in _CANDIDATE_HOMES]
    on_path = shutil.which("java")
    if on_path:
        candidates.append(Path(on_path))
    for java in candidates:
        if java.exists() and _major_version(java) == 17:
            return java
    raise CasstorError(
        "Java 17 not found (Cassandra 5.0 needs it): install it with "
        "'apt-get install openjdk-17-jdk-headless' or set JAVA_HOME to a Java 17"
    )


def java17_home() -> Path:
    return find_java17().resolve().parent.parent
