"""The `memstrata` command, driven through click's runner on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memstrata.cli import main


def test_demo_runs_and_shows_every_layer(tmp_path: Path):
    result = CliRunner().invoke(main, ["demo", "--db", str(tmp_path / "demo.db")])
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in ("What each layer kept", "working", "long-term", "dropped",
                     "corrected", "conflict", "Recall", "window seats", "Munich",
                     "[superseded]", "isolated", "Timings"):
        assert expected in out, expected
    assert "LEAK" not in out


def test_demo_refuses_an_existing_database(tmp_path: Path):
    db = tmp_path / "demo.db"
    db.write_text("")
    result = CliRunner().invoke(main, ["demo", "--db", str(db)])
    assert result.exit_code != 0


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
    assert r.exit_code == 0 and "1 records indexed" in r.output
    r = runner.invoke(main, ["forget", "alice", record_id])
    assert r.exit_code == 0 and record_id in r.output
    r = runner.invoke(main, ["recall", "alice", "which seat?"])
    assert "(nothing relevant)" in r.output
    assert (_isolated_home / "memstrata.db").exists()


def test_errors_are_reported_not_raised(_isolated_home: Path):
    r = CliRunner().invoke(main, ["remember", "alice", "x", "--type", "nonsense"])
    assert r.exit_code == 2 and "unknown memory type" in r.output
    r = CliRunner().invoke(main, ["forget", "alice"])
    assert r.exit_code != 0
    r = CliRunner().invoke(main, ["forget", "alice", "--all", "--yes"])
    assert r.exit_code == 0
