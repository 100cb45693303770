"""The store path loads the local-node launcher only when the embedded node is used, a command loads no NumPy nor
server stack, and importing a command starts no process (no node, no Spark)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import ROOT

LAUNCHER = "casstor_ops.cluster.launcher"


def _launcher_loaded(nodes: str | None) -> bool:
    """Imports the store facade and the CLI's file commands and resolves the endpoint, in a fresh interpreter."""
    probe = ("import sys; import casstor_ops.store.api, casstor_ops.cli.cmd_files; "
             "from casstor_ops.cluster.connection import endpoint_from_env; endpoint_from_env(); "
             f"print({LAUNCHER!r} in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "CASSTOR_NODES"}
    if nodes is not None:
        env["CASSTOR_NODES"] = nodes
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip() == "True"


@pytest.mark.parametrize("nodes, loaded", [("10.0.0.1,10.0.0.2:9042", False), (None, True)])
def test_the_launcher_is_loaded_for_the_embedded_node_only(nodes: str | None, loaded: bool) -> None:
    assert _launcher_loaded(nodes) is loaded


def test_a_command_loads_the_driver_without_numpy_twisted_or_the_server_stack() -> None:
    """Imports the CLI and the driver in a fresh interpreter (as every 'casstor' command does); checks that NumPy,
    the Twisted reactor's dependencies and uvicorn are not loaded, that the driver knows it has no NumPy, and
    that NumPy still imports for any other module that wants it."""
    probe = ("import sys; import casstor_ops.cli.main as m; m.build_parser(); import cassandra.cluster, "
             "cassandra.cython_deps as deps; loaded = [n for n in ('numpy', 'wrapt', 'uvicorn') if n in sys.modules]; "
             "import numpy; print(loaded, deps.HAVE_NUMPY, numpy.zeros(2).sum())")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]", "False", "0.0"]


def test_importing_a_command_starts_no_process() -> None:
    """Imports the CLI (every module a 'casstor' command loads at its start) in a fresh interpreter whose
    ``subprocess.Popen`` fails; checks that nothing started a process (ctypes.util.find_library, once used to
    find libc's syncfs, runs `/sbin/ldconfig -p` in one) and that syncfs is still found."""
    probe = ("import subprocess\n"
             "def refuse(*args, **kwargs): raise AssertionError(f'a process started at import: {args[1:]}')\n"
             "subprocess.Popen.__init__ = refuse\n"
             "import casstor_ops.cli.main as m; m.build_parser()\n"
             "from casstor_ops.store.trees import temporary\n"
             "print(temporary._SYNCFS is not None)")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["True"]
