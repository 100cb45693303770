"""Password files and CASSTOR_PASSWORD_FILE: written 0600 whatever the umask, refused when others may read them,
and never carried by an Endpoint (which is pickled to Spark executors). No node is used."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from casstor_ops.cluster.connection import Endpoint, endpoint_from_env
from casstor_ops.cluster.paths import private_dir
from casstor_ops.cluster.secret_files import new_password, read_password_file, write_secret
from casstor_ops.errors import EXIT_USAGE, CasstorError

from ..support import ROOT


@pytest.fixture()
def loose_umask():
    old = os.umask(0)
    yield
    os.umask(old)


def _usage_error(call) -> str:
    with pytest.raises(CasstorError) as caught:
        call()
    assert caught.value.exit_code == EXIT_USAGE and "\n" not in str(caught.value)
    return str(caught.value)


def test_secrets_and_private_dirs_are_owner_only_whatever_the_umask(tmp_path, loose_umask) -> None:
    """Injects umask 0; checks the directory is 0700, the file 0600, and the password reads back."""
    password = new_password()
    path = write_secret(tmp_path / "a" / "credentials" / "role.password", password)
    assert (path.parent.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o700, 0o600)
    assert read_password_file(str(path), "CASSTOR_PASSWORD_FILE") == password
    assert private_dir(tmp_path / "logs").stat().st_mode & 0o777 == 0o700
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_a_file_others_may_read_is_refused(tmp_path, mode) -> None:
    """Injects group- or world-readable modes; checks a usage error naming the fix, not the password."""
    path = tmp_path / "pw"
    path.write_text("s3cret-value\n")
    path.chmod(mode)
    message = _usage_error(lambda: read_password_file(str(path), "CASSTOR_PASSWORD_FILE"))
    assert message == (f"CASSTOR_PASSWORD_FILE={path}: others may read or change it (mode {mode:04o}); "
                       f"run 'chmod 600 {path}'")


def test_missing_empty_and_directory_are_one_line(tmp_path) -> None:
    """Injects a missing file, an empty file and a directory; checks one usage line each."""
    assert _usage_error(lambda: read_password_file(str(tmp_path / "no"), "S")).endswith("No such file or directory")
    empty = tmp_path / "empty"
    empty.touch(mode=0o600)
    assert "the file is empty" in _usage_error(lambda: read_password_file(str(empty), "S"))
    private_dir(tmp_path / "dir")
    assert _usage_error(lambda: read_password_file(str(tmp_path / "dir"), "S")).endswith("not a regular file")


def test_a_file_the_user_cannot_read_is_one_line(tmp_path) -> None:
    """Injects a 0600 file read by another user (setpriv: root reads any file); checks one line, exit 2."""
    path = write_secret(tmp_path / "credentials" / "pw", "s3cret-value")
    code = ("from casstor_ops.cluster.secret_files import read_password_file as r\n"
            "from casstor_ops.errors import run_reporting_errors as run\n"
            f"raise SystemExit(run(lambda: r({str(path)!r}, 'X')))")
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (run.returncode, run.stderr) == (EXIT_USAGE, f"casstor: X={path}: Permission denied\n")


def test_endpoint_keeps_the_path_and_reads_the_password_at_connect(tmp_path, monkeypatch) -> None:
    """Checks the pickled and printed endpoint hold the file's path, never its content, and secret() reads it."""
    password = new_password()
    path = write_secret(tmp_path / "pw", password)
    monkeypatch.setenv("CASSTOR_NODES", "10.0.0.1")
    monkeypatch.setenv("CASSTOR_USERNAME", "casstor")
    monkeypatch.setenv("CASSTOR_PASSWORD_FILE", str(path))
    monkeypatch.delenv("CASSTOR_PASSWORD", raising=False)
    endpoint = endpoint_from_env()
    assert (endpoint.password, endpoint.password_file, endpoint.secret()) == (None, str(path), password)
    assert password.encode() not in pickle.dumps(endpoint) and password not in repr(endpoint)
    assert pickle.loads(pickle.dumps(endpoint)).secret() == password


def test_password_file_settings_that_cannot_work_are_usage_errors(tmp_path, monkeypatch) -> None:
    """Injects both passwords at once, a file without a user name, and a world-readable file; checks one line each."""
    path = write_secret(tmp_path / "pw", "s3cret-value")
    monkeypatch.setenv("CASSTOR_NODES", "10.0.0.1")
    monkeypatch.setenv("CASSTOR_PASSWORD_FILE", str(path))
    monkeypatch.setenv("CASSTOR_USERNAME", "casstor")
    monkeypatch.setenv("CASSTOR_PASSWORD", "other")
    assert _usage_error(endpoint_from_env).startswith("both CASSTOR_PASSWORD and CASSTOR_PASSWORD_FILE are set")
    monkeypatch.delenv("CASSTOR_PASSWORD")
    monkeypatch.delenv("CASSTOR_USERNAME")
    assert _usage_error(endpoint_from_env).startswith("CASSTOR_PASSWORD_FILE is set but CASSTOR_USERNAME is not")
    monkeypatch.setenv("CASSTOR_USERNAME", "casstor")
    path.chmod(0o644)
    assert "others may read or change it" in _usage_error(endpoint_from_env)


def test_a_password_given_directly_is_never_printed() -> None:
    assert "hunter2" not in repr(Endpoint(("h",), 9042, False, "u", "hunter2"))
