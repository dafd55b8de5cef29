"""``memstrata eval`` through click's runner on a tiny dataset."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memstrata.cli import main


def test_eval_command_prints_the_table_and_writes_the_report(tiny_jsonl: Path, tmp_path: Path):
    out = tmp_path / "report"
    config = tmp_path / "eval.toml"
    config.write_text("bootstrap = 50\ndepth = 10\n[variants.dense-heavy]\ndense_weight = 0.8\n")
    result = CliRunner().invoke(main, [
        "eval", str(tiny_jsonl), "--k", "1,3", "--out", str(out), "--config", str(config),
        "--quiet",
    ])
    assert result.exit_code == 0, result.output
    assert "| retriever | recall@1 | recall@3 |" in result.output
    for name in ("dense", "keyword", "rrf", "default", "dense-heavy"):
        assert f"| `{name}` |" in result.output
    for name in ("results.json", "report.md", "recall_at_k.png", "token_budget.png",
                 "by_category.png"):
        assert (out / name).is_file(), name
    data = json.loads((out / "results.json").read_text())
    assert data["ks"] == [1, 3] and data["dataset"]["probes"] == 5
    assert data["config"]["variants"] == {"dense-heavy": {"dense_weight": 0.8}}


def test_eval_command_subset_and_retriever_choice(tiny_jsonl: Path, tmp_path: Path):
    out = tmp_path / "r"
    result = CliRunner().invoke(main, [
        "eval", str(tiny_jsonl), "--retrievers", "keyword,default", "--conversations", "1",
        "--questions", "2", "--out", str(out), "--no-plots", "--cache", str(tmp_path / "c"),
    ])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert [r["name"] for r in data["runs"]] == ["keyword", "default"]
    assert data["dataset"]["conversations"] == 1 and data["dataset"]["probes"] == 2
    assert not (out / "recall_at_k.png").exists()
    assert "questions" in result.output  # the dataset line on stderr (mixed by the runner)


def test_eval_command_rejects_bad_input_with_clear_errors(tmp_path: Path, tiny_jsonl: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"user": "u", "text": "no session or time"}\n')
    result = CliRunner().invoke(main, ["eval", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "error:" in result.output and "bad.jsonl:1" in result.output
    assert not (tmp_path / "o").exists()
    result = CliRunner().invoke(main, ["eval", str(tiny_jsonl), "--k", "one,five"])
    assert result.exit_code == 2 and "comma-separated integers" in result.output
    result = CliRunner().invoke(main, ["eval", str(tiny_jsonl), "--retrievers", "magic"])
    assert result.exit_code == 2 and "unknown retrievers" in result.output
    result = CliRunner().invoke(main, ["eval", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "no such file" in result.output
