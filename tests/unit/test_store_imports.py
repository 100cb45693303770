"""The store path loads the local-node launcher only when the embedded node is used (no node, no Spark)."""

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
