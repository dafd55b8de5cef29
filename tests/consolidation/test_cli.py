"""The consolidation commands, driven through click's runner on a real SQLite file."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from memstrata import MemoryManager, Status
from memstrata.cli import main
from memstrata.memory.embedder import Embedder


def test_consolidate_dry_run_runs_and_undo(tmp_path: Path, embedder: Embedder):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with MemoryManager.open(url, embedder=embedder) as mm:
        jazz = mm.remember("alice", "I like jazz.", type="preference").record_id
        mm.remember("alice", "I don't like jazz.", type="preference")
        past = datetime.now(UTC) - timedelta(hours=2)
        mm.observe("alice", "s1", "user", "I prefer quiet hotels in the old town.", at=past)
    runner = CliRunner()

    dry = runner.invoke(main, ["consolidate", "--url", url, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "(dry run) summarize" in dry.stdout and "would summarize_session" in dry.stdout
    assert "would flag_conflict" in dry.stdout
    flagged = [line for line in dry.stdout.splitlines() if "would flag_conflict" in line]
    assert any("'I like jazz.'" in line for line in flagged)  # the record, by its content
    assert any("status: 'active' -> 'pending_confirmation'" in line for line in flagged)
    assert not re.search(r"\b1\d{9}\.\d+", dry.stdout)  # no epoch floats
    with MemoryManager.open(url, embedder=embedder) as mm:
        assert mm.get("alice", jazz).status is Status.ACTIVE
        assert mm.memories("alice", types=["summary"]) == []

    done = runner.invoke(main, ["consolidate", "--url", url, "--job", "conflicts", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["counts"] == {"flag_conflict": 2} and report["method"] == "offline"
    run_id = report["run_id"]

    listed = runner.invoke(main, ["runs", "--url", url])
    assert listed.exit_code == 0 and run_id in listed.stdout
    shown = runner.invoke(main, ["runs", "--url", url, run_id])
    assert shown.stdout.count("flag_conflict") == 3  # the summary line and two actions
    assert "'I like jazz.'" in shown.stdout and "I don't like jazz." in shown.stdout
    assert re.search(r"started \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", shown.stdout)
    assert not re.search(r"\b1\d{9}\.\d+", shown.stdout)

    undone = runner.invoke(main, ["undo", "--url", url, run_id, "--yes"])
    assert undone.exit_code == 0, undone.output
    assert "restore=2" in undone.stdout
    assert "%|" not in undone.output  # no bar off a terminal: one line per phase
    with MemoryManager.open(url, embedder=embedder) as mm:
        assert mm.get("alice", jazz).status is Status.ACTIVE
    again = runner.invoke(main, ["undo", "--url", url, run_id, "--yes"])
    assert again.exit_code == 2 and "already undone" in again.stderr
    with MemoryManager.open(url, embedder=embedder) as mm:
        mm.forget("alice", jazz)
    shown = runner.invoke(main, ["runs", "--url", url, run_id])
    assert "(forgotten)" in shown.stdout and "'I like jazz.'" not in shown.stdout
    unknown = runner.invoke(main, ["runs", "--url", url, "nope"])
    assert unknown.exit_code == 2 and "no consolidation run" in unknown.stderr
    bad = runner.invoke(main, ["consolidate", "--url", url, "--job", "defrag"])
    assert bad.exit_code == 2
