"""`memstrata eval` reports results per language when a data set mixes them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memstrata.cli import main as cli
from memstrata.eval import EvalConfig, Evaluation, KeywordRetriever, load_dataset
from memstrata.memory.embedder import Embedder
from tests.eval.conftest import TINY_PROBES, TINY_TURNS, _turn

ZH_TURNS = [
    _turn("lin", "s1", "2026-03-02T20:00:00Z", "用户", "我对花生过敏，吃了会起疹子。"),
    _turn("lin", "s1", "2026-03-02T20:01:00Z", "助手", "好的，我记下了。"),
    _turn("lin", "s1", "2026-03-02T20:02:00Z", "用户", "下个月十二号我要去成都出差，大概待三天。"),
    _turn("lin", "s2", "2026-03-05T21:00:00Z", "用户", "我女儿今年六岁，刚上一年级。"),
    _turn("lin", "s2", "2026-03-05T21:01:00Z", "用户", "I switched my phone to English."),
]
ZH_PROBES = [
    {"user": "lin", "question": "我对什么东西过敏？", "evidence_ids": ["s1:1"],
     "category": "health", "answer": "花生"},
    {"user": "lin", "question": "我下个月去哪个城市出差？", "evidence_ids": ["s1:3"],
     "category": "plan", "answer": "成都"},
    {"user": "lin", "question": "我女儿多大了？", "evidence_ids": ["s2:1"], "category": "family"},
    {"user": "lin", "question": "Which language is my phone set to?", "evidence_ids": ["s2:2"],
     "category": "profile"},
]
CONFIG = EvalConfig.build(k=(1, 5), depth=10, bootstrap=50)


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n",
                    encoding="utf-8")
    return path


def test_mixed_data_is_summarised_per_language(tmp_path: Path, embedder: Embedder):
    data = load_dataset(_write(tmp_path / "mixed.jsonl",
                               [*TINY_TURNS, *TINY_PROBES, *ZH_TURNS, *ZH_PROBES]))
    with Evaluation.open(data, CONFIG, embedder=embedder, progress=False) as ev:
        result = ev.evaluate([KeywordRetriever()])
    langs = result.summary("keyword").by_language
    assert set(langs) == {"latin", "zh"}
    assert langs["zh"]["recall@5"].n == 3
    assert langs["latin"]["recall@5"].n == 5 + 1  # TINY's answerable probes + the English one
    assert langs["zh"]["hit@5"].mean == 1.0  # every Chinese fact shares a word with its question
    report = result.to_markdown()
    assert "by language of the question" in report
    assert "| Chinese (Han) | 3 |" in report
    assert "by_language" in result.summary("keyword").to_dict()


def test_one_language_has_no_language_section(tmp_path: Path, embedder: Embedder):
    data = load_dataset(_write(tmp_path / "en.jsonl", [*TINY_TURNS, *TINY_PROBES]))
    with Evaluation.open(data, CONFIG, embedder=embedder, progress=False) as ev:
        result = ev.evaluate([KeywordRetriever()])
    assert set(result.summary("keyword").by_language) == {"latin"}
    assert "by language" not in result.to_markdown()


def test_the_command_prints_the_language_table(tmp_path: Path):
    path = _write(tmp_path / "mixed.jsonl", [*TINY_TURNS, *TINY_PROBES, *ZH_TURNS, *ZH_PROBES])
    out = CliRunner().invoke(cli, ["eval", str(path), "--k", "1,5", "--out",
                                   str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    assert "Chinese (Han)" in out.output and "Latin script" in out.output
