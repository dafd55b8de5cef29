"""``memstrata mcp`` and ``memstrata mcp-token`` on the command line: options are checked
before anything is opened, tokens are stored as digests, the SDK loads only when a
server is built, and the docs' client configuration is one the command accepts."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp_harness import server_env

from memstrata.cli import main
from memstrata.errors import InvalidSettingError
from memstrata.mcp.cli import mcp
from memstrata.mcp.tokens import TokenFile, add_token, token_digest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("args", "message"), [
    (["mcp"], "give --user"),
    (["mcp", "--user", ""], "empty"),
    (["mcp", "--user", "alice", "--tokens", "t.json"], "--tokens is for --transport http"),
    (["mcp", "--transport", "http"], "needs --tokens"),
    (["mcp", "--transport", "http", "--tokens", "t.json", "--user", "alice"],
     "--user is for stdio"),
    (["mcp", "--transport", "http", "--tokens", "missing.json"], "cannot read the token file"),
    (["mcp", "--transport", "http", "--tokens", "t.json", "--port", "0"], "0"),
    (["mcp", "--transport", "websocket", "--user", "alice"], "websocket"),
])
def test_bad_options_are_refused_before_anything_is_opened(
        args: list[str], message: str, tmp_path: Path, _isolated_home: Path,
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    Path("t.json").write_text('{"tokens": []}')
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not _isolated_home.exists()  # no database was created


def test_a_token_file_without_tokens_or_malformed_is_refused(tmp_path: Path,
                                                             _isolated_home: Path):
    tokens = tmp_path / "tokens.json"
    for text, message in (('{"tokens": []}', "lists no tokens"),
                          ("{not json", "not JSON"),
                          ('{"tokens": [{"user": "alice", "sha256": "abc"}]}', "64 lower-case"),
                          ('{"tokens": [{"user": "", "sha256": "' + "a" * 64 + '"}]}', "entry 0"),
                          ('{"tokens": [{"user": "a", "token": "secret"}]}', "needs 'user'")):
        tokens.write_text(text)
        result = CliRunner().invoke(main, ["mcp", "--transport", "http", "--tokens", str(tokens)])
        assert result.exit_code == 2 and message in result.output, (text, result.output)
    assert not _isolated_home.exists()


def test_mcp_token_prints_a_token_once_and_stores_its_digest(tmp_path: Path):
    tokens = tmp_path / "tokens.json"
    runner = CliRunner()
    first = runner.invoke(main, ["mcp-token", "--tokens", str(tokens), "--user", "alice"])
    second = runner.invoke(main, ["mcp-token", "--tokens", str(tokens), "--user", "bob",
                                  "--label", "bob-phone"])
    assert first.exit_code == 0 and second.exit_code == 0, (first.output, second.output)
    alice, bob = first.stdout.strip(), second.stdout.strip()
    assert re.fullmatch(r"[\w-]{43}", alice) and alice != bob
    text = tokens.read_text()
    assert alice not in text and bob not in text and token_digest(alice) in text
    assert stat.S_IMODE(os.stat(tokens).st_mode) == 0o600
    file = TokenFile(tokens)
    found = file.lookup(alice)
    assert found is not None and found.user_id == "alice"
    found = file.lookup(bob)
    assert found is not None and (found.user_id, found.label) == ("bob", "bob-phone")
    assert file.lookup(token_digest(alice)) is None and file.lookup("") is None
    # refused: a label twice, a bad user - the file is unchanged
    for args in (["--user", "carol", "--label", "bob-phone"], ["--user", "bad\x00id"]):
        r = runner.invoke(main, ["mcp-token", "--tokens", str(tokens), *args])
        assert r.exit_code == 2, r.output
    assert tokens.read_text() == text


def test_a_token_file_is_reread_when_it_changes_and_fails_closed(tmp_path: Path):
    path = tmp_path / "tokens.json"
    alice = add_token(path, "alice")
    tokens = TokenFile(path)
    assert tokens.lookup(alice) is not None
    bob = add_token(path, "bob")  # added while the server runs
    found = tokens.lookup(bob)
    assert found is not None and found.user_id == "bob"
    good = path.read_text()
    path.write_text(good.replace('"tokens"', '"tokenz"'))  # broken: nobody gets in
    assert tokens.lookup(alice) is None and tokens.lookup(bob) is None
    path.write_text(good + " ")  # fixed
    assert tokens.lookup(alice) is not None
    path.unlink()  # gone: nobody gets in
    assert tokens.lookup(alice) is None
    with pytest.raises(InvalidSettingError, match="cannot read the token file"):
        TokenFile(path)


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=server_env(tmp_path / "home"), timeout=300, check=False)


def test_without_the_mcp_package_the_error_names_the_extra(tmp_path: Path):
    code = ("import sys\nsys.modules['mcp'] = None  # as if `mcp` were not installed\n"
            "from memstrata.cli import main\n"
            f"main(['mcp', '--user', 'alice', '--url', 'sqlite:///{tmp_path}/m.db'])\n")
    done = _run(code, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "pip install 'memstrata[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "m.db").exists()


def test_the_command_list_does_not_import_the_sdk(tmp_path: Path):
    code = ("import sys\nfrom memstrata.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "try:\n    main(['mcp', '--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('mcp', 'starlette', 'uvicorn', 'onnxruntime', 'torch')"
            " if m in sys.modules)\n"
            "print('HEAVY=' + ','.join(heavy))\n")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "mcp-token" in done.stdout and "--tokens" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "HEAVY="


def _docs_servers() -> dict[str, dict[str, object]]:
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    servers: dict[str, dict[str, object]] = {}
    for body in re.findall(r"^```json\n(.*?)^```", text, re.S | re.M):
        servers.update(json.loads(body).get("mcpServers", {}))
    return servers


def test_the_documented_client_configurations_are_accepted_by_the_command():
    servers = _docs_servers()
    assert servers, "docs/mcp.md shows no mcpServers entry"
    for name, entry in servers.items():
        args = entry.get("args")
        if "command" not in entry:  # an HTTP entry: a URL and a bearer token header
            assert str(entry["url"]).endswith("/mcp"), name
            assert "Bearer " in json.dumps(entry.get("headers")), name
            continue
        assert isinstance(args, list)
        if entry["command"] != "memstrata":
            assert args[:2] == ["-m", "memstrata.mcp"], name
            args = ["mcp", *args[2:]]
        assert args[0] == "mcp", name
        ctx = mcp.make_context("mcp", list(args[1:]))  # raises on an unknown option
        assert ctx.params["user_id"] or ctx.params["tokens"], name
