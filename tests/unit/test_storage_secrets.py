"""A URL filesystem's credentials never on a command line: a secret-looking ``--storage-option`` is refused (exit
2, one line naming the key, never its value) and ``--storage-options-file`` is read only from a file only its owner
may read. No node, no Spark: the jobs' own argument parser."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from casstor_ops.errors import EXIT_USAGE
from jobs.ingest import build_parser

SECRET_VALUE = "wJalrXUtnFEMI-not-a-real-secret"


def _refused(capsys: pytest.CaptureFixture, *argv: str) -> str:
    """The one stderr line of a usage error (exit 2) for ``argv`` after a source."""
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["s3://bucket/tree/", *argv])
    assert caught.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and SECRET_VALUE not in err, err
    return err


def _options_file(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "s3.options"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize("key", ["key", "SECRET", "token", "password", "session_token", "client_secret",
                                 "aws_access_key_id", "aws_secret_access_key", "credentials", "account_key",
                                 "sas_token"])
def test_a_secret_storage_option_is_refused_naming_its_key_not_its_value(capsys, key: str) -> None:
    """Injects each secret-looking key (any case) as --storage-option; checks exit 2 and one line that names the
    key and points to the options file and the AWS places, without the value (it used to be taken, and so sat
    in ps and the shell history)."""
    err = _refused(capsys, "--storage-option", f"{key}={SECRET_VALUE}")
    assert f"--storage-option {key}=…" in err and "--storage-options-file" in err and "~/.aws/credentials" in err


def test_a_secret_nested_in_a_json_option_is_refused(capsys) -> None:
    """Injects the secret inside a JSON value (client_kwargs); checks it is refused as client_kwargs.<key>."""
    err = _refused(capsys, "--storage-option", f'client_kwargs={{"aws_secret_access_key": "{SECRET_VALUE}"}}')
    assert "--storage-option client_kwargs.aws_secret_access_key=…" in err


def test_harmless_options_pass_and_win_over_the_file(tmp_path: Path) -> None:
    """Checks options that are no secret (endpoint_url, anon, a key id of KMS) pass, and that a --storage-option
    pair wins over the file's value whichever comes first."""
    path = _options_file(tmp_path, json.dumps({"key": SECRET_VALUE, "endpoint_url": "http://file:9000"}))
    for argv in (["--storage-options-file", path, "--storage-option", "endpoint_url=http://cli:9000"],
                 ["--storage-option", "endpoint_url=http://cli:9000", "--storage-options-file", path]):
        args = build_parser().parse_args(["s3://b/", "--storage-option", "anon=false", "--storage-option",
                                          "sse_kms_key_id=alias/x", *argv])
        assert args.storage_options == {"key": SECRET_VALUE, "endpoint_url": "http://cli:9000", "anon": False,
                                        "sse_kms_key_id": "alias/x"}


def test_an_options_file_is_json_or_key_value_lines(tmp_path: Path) -> None:
    """Checks both forms of the file: a JSON object, and KEY=VALUE lines with JSON values, blanks and comments."""
    as_json = _options_file(tmp_path, '{"key": "K", "secret": "S", "client_kwargs": {"region_name": "r"}}')
    assert build_parser().parse_args(["s3://b/", "--storage-options-file", as_json]).storage_options == \
        {"key": "K", "secret": "S", "client_kwargs": {"region_name": "r"}}
    as_lines = _options_file(tmp_path, "# the test bucket\nkey=K\n\nsecret=S\nuse_ssl=false\n")
    assert build_parser().parse_args(["s3://b/", "--storage-options-file", as_lines]).storage_options == \
        {"key": "K", "secret": "S", "use_ssl": False}


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_an_options_file_others_may_read_is_refused(capsys, tmp_path: Path, mode: int) -> None:
    """Injects an options file open to its group or others; checks exit 2 and the one line of the password files'
    check (mode and the chmod to run), never the content."""
    path = _options_file(tmp_path, f"secret={SECRET_VALUE}\n", mode)
    err = _refused(capsys, "--storage-options-file", path)
    assert f"--storage-options-file={path}: others may read or change it (mode {mode:04o}); run 'chmod 600" in err


@pytest.mark.parametrize("text, message", [("secret\n", "line 1 is not KEY=VALUE"), ("[1]", "line 1 is not"),
                                           ('{"secret": ', "not valid JSON"), ("", None)])
def test_a_bad_or_missing_options_file_is_one_line(capsys, tmp_path: Path, text: str, message: str | None) -> None:
    """Injects a line that is no pair, a JSON list, broken JSON, and a path that is not there or not a regular
    file; checks one line naming the file (and the line), exit 2, never the content."""
    if message is None:
        assert "No such file or directory" in _refused(capsys, "--storage-options-file", str(tmp_path / "none"))
        assert "not a regular file" in _refused(capsys, "--storage-options-file", os.devnull)
        return
    assert message in _refused(capsys, "--storage-options-file", _options_file(tmp_path, text))
