"""The project's own recall data (``benchmarks/data/recall/``): every file passes the
checker its writers used, loads as a ``memstrata eval`` data set, and keeps a held-out
split of users in every file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from memstrata.eval import load_dataset

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "recall"


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FILES = sorted(DATA.glob("recall_*.jsonl"))


def test_every_file_passes_the_checker(capsys: pytest.CaptureFixture[str]) -> None:
    checker = _module(ROOT / "scripts" / "check_recall_data.py")
    assert len(FILES) >= 5
    assert checker.main([str(p) for p in FILES]) == 0, capsys.readouterr().out


def test_the_checker_names_evidence_that_is_no_turn(tmp_path: Path) -> None:
    checker = _module(ROOT / "scripts" / "check_recall_data.py")
    bad = tmp_path / "bad.jsonl"
    turn = {"user": "u_1", "session": "s1", "time": "2025-03-04T19:20:00Z",
            "speaker": "user", "text": "my sister moved to Leeds", "id": "s1:1"}
    asked = {"user": "u_1", "question": "where does my sister live?",
             "evidence_ids": ["s1:2"], "category": "single-hop", "answer": "Leeds",
             "id": "u_1/q1"}
    absent = {**asked, "evidence_ids": ["s1:1"], "category": "absent", "id": "u_1/q2"}
    bad.write_text("\n".join(json.dumps(x) for x in (turn, asked, absent)) + "\n")
    errors = checker.check(str(bad))
    assert any("names no turn" in e for e in errors)
    assert any("an absent question has no evidence" in e for e in errors)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_file_loads_as_an_eval_data_set_with_a_held_out_split(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the benchmark's own _common
    bench = _module(ROOT / "benchmarks" / "bench_recall_own.py")
    dataset = load_dataset(path)
    users = {c.user for c in dataset.conversations}
    assert len(users) >= 8
    assert {bench.split_of(u) for u in users} == {"train", "heldout"}
    scored = sum(len(c.probes) for c in dataset.conversations)
    # absent questions have no evidence: counted, not scored
    assert dataset.report.excluded_without_evidence > 0
    assert scored + dataset.report.excluded_without_evidence == dataset.report.probes_read
    assert scored >= 200
    assert not dataset.report.missing_evidence
