"""The first hour with the CLI, as a newcomer types it, on a fresh MEMSTRATA_HOME:
demo, remember, recall, stats, forget, consolidate --dry-run, runs, agent-example and
the agent-trace command it prints. Each step answers without a traceback, prints to
stdout what the next step needs, and keeps progress output off stdout."""

from __future__ import annotations

import json
import re
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner, Result

from memstrata.cli import main


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.stdout


def test_the_first_hour(_isolated_home: Path, tmp_path: Path) -> None:
    runner = CliRunner()

    out = ok(runner.invoke(main, ["demo"]))
    for heading in ("Working memory", "Long-term memory", "Episodic memory"):
        assert heading in out
    assert all(len(line) <= 80 for line in out.splitlines())

    out = ok(runner.invoke(main, ["remember", "alice", "I prefer aisle seats",
                                  "--type", "preference", "--scope", "travel"]))
    assert out.startswith("written")
    seat = out.strip().rsplit("[", 1)[1].rstrip("]")
    ok(runner.invoke(main, ["remember", "alice", "I like jazz.", "--type", "preference"]))
    ok(runner.invoke(main, ["remember", "alice", "I don't like jazz.", "--type",
                            "preference"]))

    out = ok(runner.invoke(main, ["recall", "alice", "which seat should I book?"]))
    assert "I prefer aisle seats" in out and seat in out

    stats = json.loads(ok(runner.invoke(main, ["stats"])))
    assert stats["users"] == 1 and stats["by_status"]["active"] == 3
    assert stats["database"].endswith("memstrata.db")

    out = ok(runner.invoke(main, ["forget", "alice", seat]))
    assert out.strip() == f"forgot {seat}"
    assert "(nothing relevant)" in ok(runner.invoke(main, ["recall", "alice", "aisle seat?",
                                                           "--scope", "travel"]))

    dry = runner.invoke(main, ["consolidate", "--dry-run"])
    out = ok(dry)
    assert "would flag_conflict" in out and "'I like jazz.'" in out
    assert "%|" not in dry.output  # no progress bar in a pipe

    done = json.loads(ok(runner.invoke(main, ["consolidate", "--job", "conflicts",
                                              "--json"])))
    run_id = done["run_id"]
    out = ok(runner.invoke(main, ["runs"]))
    assert run_id in out
    started = out.split()[0]
    when = datetime.fromisoformat(started)
    assert abs(when - datetime.now(UTC)) < timedelta(minutes=10)
    out = ok(runner.invoke(main, ["runs", run_id]))
    assert "I don't like jazz." in out and not re.search(r"\b1\d{9}\.\d+", out)

    out = ok(runner.invoke(main, ["agent-example", "--yes", "--dir", str(tmp_path / "shop")]))
    command = next(line.strip() for line in out.splitlines()
                   if line.strip().startswith("memstrata agent-trace "))
    out = ok(runner.invoke(main, shlex.split(command)[1:]))
    assert "[done]" in out.splitlines()[0] and out.splitlines()[-1].endswith(" tokens")
