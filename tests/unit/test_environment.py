"""Settings from the environment and the command line: a bad value is one line and exit 2, never a traceback."""

from __future__ import annotations

import pytest

from casstor_ops.cluster.connection import CONSISTENCY_LEVELS, endpoint_from_env
from casstor_ops.cluster.launcher import ClusterPorts, LocalCluster
from casstor_ops.errors import EXIT_USAGE, CasstorError

from ..support import run_casstor


def _usage_error(call) -> str:
    with pytest.raises(CasstorError) as caught:
        call()
    assert caught.value.exit_code == EXIT_USAGE and "\n" not in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize("level", ["ONE", "any", "TWO", "THREE", "LOCAL_ONE", "SERIAL", "NOPE"])
def test_weak_consistency_levels_are_refused(monkeypatch, level) -> None:
    """Injects CASSTOR_CONSISTENCY=ONE/ANY/TWO/...; checks a usage error that lists the four accepted levels."""
    monkeypatch.setenv("CASSTOR_NODES", "10.0.0.1")
    monkeypatch.setenv("CASSTOR_CONSISTENCY", level)
    message = _usage_error(endpoint_from_env)
    assert message.startswith(f"CASSTOR_CONSISTENCY={level.upper()}: casstor needs QUORUM, LOCAL_QUORUM, "
                              f"EACH_QUORUM or ALL")


@pytest.mark.parametrize("level", CONSISTENCY_LEVELS)
def test_quorum_levels_are_accepted(monkeypatch, level) -> None:
    """Injects each accepted level in lower case; checks the endpoint carries it."""
    monkeypatch.setenv("CASSTOR_NODES", "10.0.0.1")
    monkeypatch.setenv("CASSTOR_CONSISTENCY", level.lower())
    assert endpoint_from_env().consistency == level


@pytest.mark.parametrize("value", ["abc", "0", "65536", "-1", "+5", "1_000", "9042.0", "٩٠٤٢"])
def test_bad_cassandra_port_is_a_usage_error(monkeypatch, value) -> None:
    """Injects a non-numeric or out-of-range CASSTOR_PORT; checks one line naming the variable and the range."""
    monkeypatch.setenv("CASSTOR_NODES", "10.0.0.1")
    monkeypatch.setenv("CASSTOR_PORT", value)
    assert _usage_error(endpoint_from_env) == f"CASSTOR_PORT={value!r}: expected a whole number from 1 to 65535"


@pytest.mark.parametrize("nodes", ["h:abc", "h:0", "h:70000", "h1:9042,h2:9043", ":9042"])
def test_bad_cassandra_nodes_is_a_usage_error(monkeypatch, nodes) -> None:
    """Injects a malformed CASSTOR_NODES; checks a one-line usage error naming it."""
    monkeypatch.setenv("CASSTOR_NODES", nodes)
    assert _usage_error(endpoint_from_env).startswith(f"CASSTOR_NODES={nodes!r}")


def test_port_settings_default_when_unset_or_empty(monkeypatch) -> None:
    """Injects CASSTOR_PORT unset, then empty, then a valid value; checks the default and the value."""
    monkeypatch.setenv("CASSTOR_NODES", "10.0.0.1")
    monkeypatch.delenv("CASSTOR_PORT", raising=False)
    assert endpoint_from_env().port == 9042
    monkeypatch.setenv("CASSTOR_PORT", "")
    assert endpoint_from_env().port == 9042
    monkeypatch.setenv("CASSTOR_PORT", " 9142 ")
    assert endpoint_from_env().port == 9142


@pytest.mark.parametrize("var", ["CASSTOR_CQL_PORT", "CASSTOR_STORAGE_PORT", "CASSTOR_JMX_PORT"])
def test_bad_launcher_port_is_a_usage_error(monkeypatch, tmp_path, var) -> None:
    """Injects 'abc' into each port variable the launcher reads; checks a usage error, before any file is written."""
    monkeypatch.setenv(var, "abc")
    assert _usage_error(ClusterPorts.from_env) == f"{var}='abc': expected a whole number from 1 to 65535"
    _usage_error(lambda: LocalCluster(tmp_path / "cluster"))
    assert not (tmp_path / "cluster").exists()


def test_bad_heap_is_a_usage_error(monkeypatch, tmp_path) -> None:
    """Injects CASSTOR_HEAP_MB=abc and heap_mb=5; checks usage errors naming each."""
    monkeypatch.setenv("CASSTOR_HEAP_MB", "abc")
    assert _usage_error(lambda: LocalCluster(tmp_path)).startswith("CASSTOR_HEAP_MB='abc'")
    monkeypatch.delenv("CASSTOR_HEAP_MB")
    assert _usage_error(lambda: LocalCluster(tmp_path, heap_mb=5)).startswith("--heap-mb 5")


@pytest.mark.parametrize("nodes", [-1, 0, 255])
def test_node_count_out_of_range_is_refused_before_starting(tmp_path, nodes) -> None:
    """Injects start(nodes=-1/0/255); checks a usage error and that no cluster was recorded."""
    cluster = LocalCluster(tmp_path / "cluster", ports=ClusterPorts(cql=1, storage=2, jmx_base=3))
    assert _usage_error(lambda: cluster.start(nodes=nodes, log=lambda _: None)) == (
        f"--nodes {nodes}: expected a whole number from 1 to 254")
    assert not (tmp_path / "cluster" / "cluster.json").exists()


def test_cli_cluster_start_negative_nodes_exits_2(tmp_path) -> None:
    """Injects 'casstor cluster start --nodes -1' (it used to exit 0 having started nothing); checks exit 2, one line."""
    out = run_casstor("cluster", "start", "--nodes", "-1", env={"CASSTOR_HOME": str(tmp_path)}, timeout=60)
    assert out.returncode == EXIT_USAGE
    assert out.stderr.decode().splitlines() == ["casstor: --nodes -1: expected a whole number from 1 to 254"]


def test_cli_non_numeric_port_exits_2(tmp_path) -> None:
    """Injects CASSTOR_PORT=abc and CASSTOR_CQL_PORT=abc into 'casstor ls' (a traceback before); checks exit 2, one line."""
    for env in ({"CASSTOR_NODES": "127.0.0.1", "CASSTOR_PORT": "abc"},
                {"CASSTOR_NODES": "", "CASSTOR_HOME": str(tmp_path), "CASSTOR_CQL_PORT": "abc"}):
        out = run_casstor("ls", env=env, timeout=60)
        assert out.returncode == EXIT_USAGE, out.stderr
        var = next(k for k in env if k.endswith("PORT"))
        assert out.stderr.decode().splitlines() == [f"casstor: {var}='abc': expected a whole number from 1 to 65535"]
