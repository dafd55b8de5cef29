"""End to end on a tiny dataset: real MiniLM, real SQLite, the public API."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata.errors import InvalidSettingError
from memstrata.eval import (
    BASELINES,
    EvalConfig,
    EvalResult,
    Evaluation,
    HybridRetriever,
    IngestOptions,
    Turn,
    evaluate,
    explain,
    load_dataset,
    policy_from,
    turn_context,
)
from memstrata.memory.embedder import Embedder
from memstrata.types import MemoryType

CONFIG = EvalConfig.build(k=(1, 5), depth=10, bootstrap=50)


def _question(result: EvalResult, retriever: str, text: str):
    return next(q for q in result.run(retriever).questions if q.question.startswith(text))


def test_evaluate_compares_the_baselines_through_the_public_api(
    tiny_jsonl: Path, embedder: Embedder
):
    data = load_dataset(tiny_jsonl)
    with Evaluation.open(data, CONFIG, embedder=embedder, progress=False) as ev:
        result = ev.evaluate()
        # read-only recall: evaluating did not count as use
        for user in ("ana", "bo"):
            assert all(r.access_count == 0 for r in ev.memory.memories(user, limit=50))
        outcomes = ev.ingested.report.outcomes
    assert [r.name for r in result.runs] == list(BASELINES)
    # the exact duplicate "Thanks!" was merged; its record covers both turns
    assert outcomes == {"written": 12, "reinforced": 1}
    merged = [rec for rec in result.records["ana"].values() if len(rec["turns"]) > 1]
    assert [m["turns"] for m in merged] == [["s1:5", "s2:4"]]
    default = result.run("default")
    assert len(default.questions) == 5
    for text in ("What is the name of Ana's cat", "Which instrument", "Which marathon"):
        q = _question(result, "default", text)
        assert q.recall(5) == 1.0, explain(result, q)
    two = _question(result, "default", "Who teaches Ana")
    assert two.ideal_gains == (1, 1) and len(two.evidence_ranks) == 2
    # users never see each other's memories
    ana_ids, bo_ids = set(result.records["ana"]), set(result.records["bo"])
    for run in result.runs:
        for q in run.questions:
            ids = {item.record_id for item in q.retrieved}
            assert ids <= (ana_ids if q.user == "ana" else bo_ids)
    # tokens to the evidence are counted with the embedder's tokenizer
    cat = _question(result, "default", "What is the name of Ana's cat")
    rank = cat.evidence_ranks[0]
    assert rank is not None
    assert cat.evidence_tokens[0] == cat.cumulative_tokens[rank - 1] > 0
    summary = result.summary("default")
    assert 0.0 <= summary.overall["recall@5"].low <= summary.overall["recall@5"].high <= 1.0
    assert set(summary.by_category) == {"single-hop", "multi-hop"}
    assert set(summary.by_conversation) == {"ana", "bo"}
    assert summary.latency["p50_ms"] > 0
    diff = result.compare("default", "dense", "recall@5")
    assert -1.0 <= diff.low <= diff.mean <= diff.high <= 1.0


def test_production_write_policy_loses_evidence_in_small_talk(
    tiny_jsonl: Path, embedder: Embedder
):
    config = CONFIG.model_copy(update={"write_policy": "default", "retrievers": ("default",)})
    with Evaluation.open(load_dataset(tiny_jsonl), config, embedder=embedder,
                         progress=False) as ev:
        result = ev.evaluate()
        report = ev.ingested.report
    assert report.users["ana"].turn_record["s1:5"] is None  # "Thanks!" was not memorable
    assert report.outcomes["dropped_not_memorable"] >= 2
    q = _question(result, "default", "What did Ana say after")
    assert q.evidence_ranks == (None,) and q.recall(5) == 0.0 and q.ideal_gains == (1,)


def test_ingest_cache_is_reused_and_results_match(
    tiny_jsonl: Path, embedder: Embedder, tmp_path: Path
):
    data = load_dataset(tiny_jsonl)
    config = CONFIG.model_copy(update={"retrievers": ("keyword", "default")})
    first = evaluate(data, config, embedder=embedder, cache_dir=tmp_path / "c", progress=False)
    second = evaluate(data, config, embedder=embedder, cache_dir=tmp_path / "c", progress=False)
    assert first.ingest["cached"] is False and second.ingest["cached"] is True
    assert len(list((tmp_path / "c").iterdir())) == 1
    for name in ("keyword", "default"):
        assert first.run(name).values("recall@5").tolist() == \
            second.run(name).values("recall@5").tolist()
    # other ingest options are another cache entry
    other = config.model_copy(update={"context": ("speaker",)})
    evaluate(data, other, embedder=embedder, cache_dir=tmp_path / "c", progress=False)
    assert len(list((tmp_path / "c").iterdir())) == 2
    # an unreadable entry is ingested again, not trusted
    (entry,) = [p for p in (tmp_path / "c").iterdir()
                if json.loads((p / "ingest.json").read_text())["options"]["context"] != ["speaker"]]
    (entry / "ingest.json").write_text("{truncated")
    third = evaluate(data, config, embedder=embedder, cache_dir=tmp_path / "c", progress=False)
    assert third.ingest["cached"] is False
    assert third.run("default").values("recall@5").tolist() == \
        first.run("default").values("recall@5").tolist()


def test_save_writes_json_markdown_and_plots_that_load_back(
    tiny_jsonl: Path, embedder: Embedder, tmp_path: Path
):
    result = evaluate(load_dataset(tiny_jsonl), CONFIG, embedder=embedder, progress=False)
    paths = result.save(tmp_path / "out")
    assert set(paths) == {"results", "report", "recall_at_k", "token_budget", "by_category"}
    for key in ("recall_at_k", "token_budget", "by_category"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = paths["report"].read_text()
    assert "| `default` |" in report and "recall@5" in report and "paired bootstrap" in report
    assert "![Recall@k](recall_at_k.png)" in report
    loaded = EvalResult.load(paths["results"])
    for name in BASELINES:
        assert loaded.summary(name).overall["recall@5"] == result.summary(name).overall["recall@5"]
        assert loaded.summary(name).overall["ndcg@5"] == result.summary(name).overall["ndcg@5"]
    q = loaded.run("default").questions[0]
    assert len(q.retrieved) <= result.keep_retrieved
    assert explain(loaded, q).startswith("**")


def test_variants_and_threshold_override_run_as_hybrids(tiny_jsonl: Path, embedder: Embedder):
    config = CONFIG.model_copy(update={
        "retrievers": ("default",),
        "variants": {"dense-heavy": {"dense_weight": 0.9},
                     "no-decay": {"half_life_days": {"event": None}}},
    })
    with Evaluation.open(load_dataset(tiny_jsonl), config, embedder=embedder,
                         progress=False) as ev:
        result = ev.evaluate()
        strict = ev.run(HybridRetriever(name="strict", min_relevance=0.99))
    assert [r.name for r in result.runs] == ["default", "dense-heavy", "no-decay"]
    assert all(q.retrieved == () for q in strict.questions)  # nothing passes 0.99
    assert all(q.recall(5) == 0.0 for q in strict.questions)


def test_config_files_and_bad_settings(tmp_path: Path):
    toml = tmp_path / "eval.toml"
    toml.write_text('k = [10, 1]\nretrievers = ["keyword"]\nbm25_b = 0.4\n'
                    '[retrieval]\nmin_relevance = 0.2\n[variants.w]\ndense_weight = 0.3\n')
    config = EvalConfig.from_file(toml, depth=20)
    assert config.k == (1, 10) and config.depth == 20 and config.bm25_b == 0.4
    assert config.policy().min_relevance == 0.2
    built = config.build_retrievers()
    assert [r.name for r in built] == ["keyword", "w"]
    json_cfg = tmp_path / "eval.json"
    json_cfg.write_text('{"retrieval": {"dense_weight": 2}}')
    with pytest.raises(InvalidSettingError, match="dense_weight"):
        EvalConfig.from_file(json_cfg)
    for bad in ({"retrievers": ["bm42"]}, {"k": [0]}, {"depth": 0}, {"colour": "red"},
                {"retrieval": {"nope": 1}}, {"variants": {"v": {"top_k": 0}}}):
        with pytest.raises(InvalidSettingError):
            EvalConfig.build(**bad)
    with pytest.raises(InvalidSettingError, match="not found"):
        EvalConfig.from_file(tmp_path / "missing.toml")
    policy = policy_from({"half_life_days": {"event": 10, "preference": None},
                          "status_weight": {"demoted": 0.1}})
    assert policy.half_life[MemoryType.EVENT] == timedelta(days=10)
    assert policy.half_life[MemoryType.PREFERENCE] is None
    assert policy_from({"half_life_days": {"event": "none"}}).half_life[MemoryType.EVENT] is None
    for bad in ({"half_life_days": {"weather": 3}}, {"half_life_days": {"event": "soon"}},
                {"status_weight": {"gone": 1}}):
        with pytest.raises(InvalidSettingError):
            policy_from(bad)


def test_turn_context_names_speaker_date_and_quotes_the_previous_turn():
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    prev = Turn("D1:1", "1", when, "Ben", " ".join(f"w{i}" for i in range(30)), 0)
    turn = Turn("D1:2", "1", when, "Ana", "I ran a race", 1)
    text = turn_context(turn, prev, IngestOptions())
    assert text is not None
    assert text.startswith('Ana on 8 May 2023, replying to "w0 w1')
    assert text.endswith('w19 ..."') and "Ben" not in text
    assert turn_context(turn, None, IngestOptions(context=("speaker",))) == "Ana"
    assert turn_context(turn, None, IngestOptions(context=())) is None
    with pytest.raises(ValueError):
        IngestOptions(context=("weather",))  # type: ignore[arg-type]


def test_failure_browser_shows_each_users_own_evidence(tmp_path: Path, embedder: Embedder):
    path = tmp_path / "same_ids.jsonl"
    rows = [
        {"user": "a", "session": "s", "time": "2024-01-01T00:00:00Z", "text": "I play the oboe"},
        {"user": "b", "session": "s", "time": "2024-01-01T00:00:00Z", "text": "I grow tomatoes"},
        {"user": "a", "question": "What does a play?", "evidence_ids": ["s:1"]},
        {"user": "b", "question": "What does b grow?", "evidence_ids": ["s:1"]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    data = load_dataset(path)
    result = evaluate(data, CONFIG.model_copy(update={"retrievers": ("default",)}),
                      embedder=embedder, progress=False)
    for q, text in zip(result.run("default").questions, ("oboe", "tomatoes"), strict=True):
        shown = explain(result, q, dataset=data)
        gold = shown.split("gold evidence:")[1].split("returned:")[0]
        assert text in gold
