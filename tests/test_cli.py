"""The `memstrata` command, driven through click's runner on a real SQLite file, and in
fresh subprocesses where what a command imports is the point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memstrata import MemoryManager
from memstrata.cli import MEMORY_TYPES, SCOPE_PATTERN, main
from memstrata.config import SCOPE_PATTERN as CONFIG_SCOPE_PATTERN
from memstrata.consolidation import Consolidator
from memstrata.consolidation.settings import ConsolidationSettings
from memstrata.memory.embedder import Embedder
from memstrata.memory.episodic import Step
from memstrata.types import MemoryType

HEAVY = ("torch", "sentence_transformers", "onnxruntime", "transformers")
#: what a command that opens no store has no need of
STORE = ("sqlalchemy", "numpy", "memstrata.memory", "memstrata.agent.agent",
         "memstrata.eval._run")
#: runs ``memstrata ARGS`` as the console script does, then says which heavy
#: modules the process imported
PROBE = f"""
import sys
from memstrata.cli import main
code = 0
try:
    main(sys.argv[1:], prog_name="memstrata")
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
print("STORE=" + ",".join(sorted(m for m in {STORE!r} if m in sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMSTRATA_HOME": str(home)}
    env.pop("MEMSTRATA_URL", None)
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def heavy_imports(proc: subprocess.CompletedProcess[str]) -> str:
    line = [x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")]
    assert line, proc.stderr
    return line[-1].removeprefix("HEAVY=")


def test_demo_runs_shows_every_layer_and_fits_80_columns(tmp_path: Path):
    result = CliRunner().invoke(main, ["demo", "--db", str(tmp_path / "demo.db")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for expected in ("What each layer kept", "Why", "Working memory", "Long-term memory",
                     "Episodic memory", "working", "long-term", "dropped", "corrected",
                     "conflict", "Recall", "window seats", "Munich", "[superseded]",
                     "isolated", "Trajectory", "Resumed at step 4", "Lesson",
                     "book_seat failed on timeout", "Timings"):
        assert expected in out, expected
    assert "LEAK" not in out
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert too_wide == []
    # every reason is printed in full (no ellipsis cuts the why)
    why = out.split("Why", 1)[1].split("Working memory", 1)[0]
    assert "…" not in why and "the old value is kept as" in why


def test_demo_refuses_an_existing_database(tmp_path: Path):
    db = tmp_path / "demo.db"
    db.write_text("")
    result = CliRunner().invoke(main, ["demo", "--db", str(db)])
    assert result.exit_code == 2 and "exists" in result.output


def test_remember_recall_forget_stats_reindex(_isolated_home: Path):
    runner = CliRunner()
    r = runner.invoke(main, ["remember", "alice", "I prefer aisle seats", "--type", "preference",
                             "--scope", "travel"])
    assert r.exit_code == 0 and r.output.startswith("written"), r.output
    record_id = r.output.strip().rsplit("[", 1)[1].rstrip("]")
    r = runner.invoke(main, ["recall", "alice", "which seat?"])
    assert r.exit_code == 0 and "I prefer aisle seats" in r.output
    r = runner.invoke(main, ["recall", "bob", "which seat?"])
    assert "(nothing relevant)" in r.output
    r = runner.invoke(main, ["stats"])
    stats = json.loads(r.output)
    assert stats["records"] == 1 and stats["by_status"]["active"] == 1
    r = runner.invoke(main, ["reindex"])
    assert r.exit_code == 0 and "1 records indexed" in r.stdout
    r = runner.invoke(main, ["reindex", "--user", "nobody"])
    assert r.exit_code == 1 and "'nobody' has no memories" in r.stderr
    assert "Traceback" not in r.output
    r = runner.invoke(main, ["forget", "alice", record_id])
    assert r.exit_code == 0 and record_id in r.output
    r = runner.invoke(main, ["recall", "alice", "which seat?"])
    assert "(nothing relevant)" in r.output
    assert (_isolated_home / "memstrata.db").exists()


def test_errors_are_reported_not_raised(_isolated_home: Path):
    r = CliRunner().invoke(main, ["remember", "alice", "x", "--type", "nonsense"])
    assert r.exit_code == 2 and "'nonsense' is not one of" in r.output
    r = CliRunner().invoke(main, ["forget", "alice"])
    assert r.exit_code == 2 and "give a MEMORY_ID or --all" in r.output
    r = CliRunner().invoke(main, ["forget", "alice", "--all", "--yes"])
    assert r.exit_code == 2 and "no memory store at" in r.output  # nothing to forget in
    assert CliRunner().invoke(main, ["remember", "bob", "I like tea."]).exit_code == 0
    r = CliRunner().invoke(main, ["forget", "alice", "--all", "--yes"])
    assert r.exit_code == 0
    r = CliRunner().invoke(main, ["forget", "alice", "nope"])
    assert r.exit_code == 2 and "no memory 'nope'" in r.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["remember", "alice", "x", "--type", "nonsense"], "'nonsense' is not one of"),
    (["remember", "alice", "x", "--scope", "Not A Scope"], "is malformed"),
    (["remember", "", "x"], "the user id is empty"),
    (["remember", "alice", "   "], "the content is empty"),
    (["recall", "alice", "q", "-k", "0"], "0 is not in the range"),
    (["recall", "alice", "q", "-k", "many"], "'many' is not a valid integer"),
    (["recall", " ", "q"], "the user id is empty"),
    (["stats", "--user", ""], "the user id is empty"),
    (["forget", "", "--all", "--yes"], "the user id is empty"),
    (["runs", "--limit", "0"], "0 is not in the range"),
    (["consolidate", "--job", "defrag"], "'defrag' is not one of"),
    (["agent-trace", "alice", ""], "is empty"),
])
def test_bad_arguments_exit_2_before_anything_is_opened(_isolated_home: Path,
                                                        args: list[str], message: str):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert not _isolated_home.exists()  # no database was created or opened


def test_a_bad_type_answers_fast_without_the_model(tmp_path: Path):
    proc = run_cli("remember", "alice", "hello", "--type", "nonsense", home=tmp_path)
    assert proc.returncode == 2 and "'nonsense' is not one of" in proc.stderr
    assert heavy_imports(proc) == ""
    assert not (tmp_path / "memstrata.db").exists()


@pytest.mark.parametrize("args", [["--help"], ["recal"], ["consolidate", "--help"],
                                  ["agent-example", "--help"], ["eval", "--help"]])
def test_help_and_a_mistyped_command_open_nothing(tmp_path: Path, args: list[str]):
    """Issue 34: ``memstrata --help`` took 1.2-3.5 s, the entry points imported the agent
    and eval packages whole (and with them the memory package, SQLAlchemy and numpy)."""
    proc = run_cli(*args, home=tmp_path)
    assert proc.returncode == (2 if args == ["recal"] else 0), proc.stderr
    store = [x for x in proc.stderr.splitlines() if x.startswith("STORE=")]
    assert store == ["STORE="], store


def test_commands_that_need_no_model_never_load_it(tmp_path: Path, embedder: Embedder):
    home = tmp_path / "home"
    url = f"sqlite:///{home / 'memstrata.db'}"
    with MemoryManager.open(url, embedder=embedder) as mm:
        jazz = mm.remember("alice", "I like jazz.", type="preference").record_id
        mm.remember("alice", "I don't like jazz.", type="preference")
        kept = mm.remember("bob", "I am vegetarian.", type="profile").record_id
        mm.recall("bob", "diet")  # writes bob's index files: forget must rewrite them
        run = Consolidator(mm, settings=ConsolidationSettings()).run("conflicts")
        task = mm.episodic.start_task("alice", "Find a jazz concert", status="running")
        mm.episodic.record_step("alice", task.task_id, Step(
            thought="look", action="search", observation="two concerts\non Friday",
            outcome="success", tokens=42))
    assert jazz and kept and run.run_id
    for args in (["stats"], ["stats", "--user", "alice"], ["runs"], ["runs", run.run_id],
                 ["undo", run.run_id, "--dry-run"], ["undo", run.run_id, "--yes"],
                 ["agent-trace", "alice", task.task_id], ["forget", "bob", kept],
                 ["forget", "alice", "--all", "--yes"]):
        proc = run_cli(*args, home=home)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert heavy_imports(proc) == "", args
    with MemoryManager.open(url, embedder=embedder) as mm:
        assert mm.stats()["records"] == 0
        assert mm.recall("bob", "vegetarian diet") == []


def test_every_option_has_help():
    ctx = click.Context(main)
    missing: list[str] = []

    def walk(command: click.Command, path: str) -> None:
        for param in command.params:
            if isinstance(param, click.Option) and not (param.help or "").strip():
                missing.append(f"{path} {param.opts[0]}")
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, f"{path} {name}")

    walk(main, "memstrata")
    assert missing == []


def test_the_cli_copies_of_types_and_scope_rules_agree():
    assert set(MEMORY_TYPES) == {t.value for t in MemoryType}
    assert SCOPE_PATTERN.pattern == CONFIG_SCOPE_PATTERN.pattern


def test_a_refused_connection_is_not_a_write_failure(_isolated_home: Path):
    r = CliRunner().invoke(main, ["stats", "--url", "postgresql://me:secret@127.0.0.1:1/x"])
    assert r.exit_code == 2
    assert "cannot connect to postgresql+psycopg://me:***@127.0.0.1:1/x" in r.stderr
    assert "write failed" not in r.output and "secret" not in r.output


@pytest.mark.parametrize("args", [["stats"], ["recall", "alice", "where do I live"],
                                  ["forget", "alice", "abc", "--yes"], ["reindex"],
                                  ["runs"], ["consolidate", "--dry-run"]])
def test_a_mistyped_url_is_an_error_not_a_new_empty_store(tmp_path: Path, args: list[str]):
    """Issue 34: a mistyped --url silently created a new empty database, and the read-only
    commands then answered "nothing" with exit 0."""
    typo = tmp_path / "no-such-dir" / "memstrat.db"
    r = CliRunner().invoke(main, [*args, "--url", f"sqlite:///{typo}"])
    assert r.exit_code == 2, r.output
    assert f"no memory store at {typo}" in r.output
    assert not typo.exists() and not typo.parent.exists()
    # the first write creates one, as before
    r = CliRunner().invoke(main, ["remember", "alice", "I live in Leeds.", "--url",
                                  f"sqlite:///{tmp_path / 'new.db'}"])
    assert r.exit_code == 0 and (tmp_path / "new.db").exists()


def test_the_demo_leaves_no_temporary_folder_behind(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    """Issue 34: each ``memstrata demo`` left a memstrata-demo-* folder in the temp dir."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert "temporary database is removed" in result.output
    assert not list(tmp_path.glob("memstrata-demo-*"))
