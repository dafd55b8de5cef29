"""What ``memstrata eval`` says while it works, and validation before the ingest.

Off a terminal (a pipe, a log file, a notebook) every phase prints one line on
stderr, the first before anything slow happens; bars are for terminals only.
A turn the memory would refuse is reported with its file and line before the
first memory is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstrata.cli import main
from memstrata.errors import ContentTooLargeError, DatasetError
from memstrata.eval import EvalConfig, evaluate, load_jsonl
from memstrata.memory.embedder import Embedder


def test_each_phase_prints_one_line_when_not_on_a_terminal(tiny_jsonl: Path, tmp_path: Path,
                                                           embedder: Embedder):
    result = CliRunner().invoke(main, [
        "eval", str(tiny_jsonl), "--out", str(tmp_path / "o"), "--no-plots",
        "--retrievers", "keyword,default", "--k", "1,5",
    ])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[0] == f"loading {tiny_jsonl}"  # printed before the heavy imports
    assert lines[1] == "tiny.jsonl: 2 conversations, 13 turns, 5 questions"
    ours = [line for line in lines if line.split(":")[0] in
            ("ingest", "recall keyword", "recall default")
            or line.startswith(("loading the embedding model", "embedding "))]
    assert ours[0].startswith("loading the embedding model (")
    assert ours[1:4] == ["ingest: 13 turns", ours[2], "embedding 5 questions"]
    assert ours[2].startswith("ingest: 13 turns in ")
    assert ours[4:] == ["recall keyword: 5 questions", "recall default: 5 questions"]
    # no bar of ours (the model library may draw its own while loading weights)
    assert not [line for line in result.stderr.split("\n")
                if ("ingest" in line or "recall" in line) and ("\r" in line or "%|" in line)]


def test_quiet_prints_nothing_on_stderr(tiny_jsonl: Path, tmp_path: Path, embedder: Embedder):
    result = CliRunner().invoke(main, [
        "eval", str(tiny_jsonl), "--out", str(tmp_path / "o"), "--no-plots",
        "--retrievers", "keyword", "--quiet",
    ])
    assert result.exit_code == 0, result.output
    assert "ingest" not in result.stderr and "loading" not in result.stderr


def test_a_turn_the_memory_refuses_is_reported_with_its_line_before_any_write(
    tmp_path: Path, embedder: Embedder
):
    path = tmp_path / "long.jsonl"
    rows = [
        {"user": "a", "session": "s", "time": "2024-01-01", "text": "I live in Lyon"},
        {"user": "a", "question": "Where?", "evidence_ids": ["s:1"]},
        {"user": "b", "session": "s", "time": "2024-01-01", "text": "fine"},
        {"user": "b", "session": "s", "time": "2024-01-02", "text": "y" * 9000},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    # loaded with a larger limit than the memory's (8,000 characters) ...
    data = load_jsonl(path, max_chars=10_000)
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError, match="b: turn s:2") as info:
        evaluate(data, EvalConfig.build(bootstrap=0), embedder=embedder, cache_dir=cache,
                 progress=False)
    # ... the ingest checks every turn first, so the first conversation was not written
    assert (info.value.source, info.value.line) == ("long.jsonl", 4)
    assert isinstance(info.value.__cause__, ContentTooLargeError)
    assert not any(cache.iterdir())
