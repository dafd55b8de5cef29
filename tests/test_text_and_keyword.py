"""Tokenisation and the per-user BM25 index."""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import pytest

from memstrata._text import content_hash, numbers, tokenize
from memstrata.memory._keyword import KeywordIndex
from memstrata.memory._store import IndexRow
from memstrata.memory.vector import IndexBatch, SearchFilter, Watermark


def test_tokenize_stems_drops_stop_words_and_splits_cjk():
    terms = tokenize("The runners were running quickly!")
    assert "the" not in terms and "were" not in terms
    assert tokenize("running") == tokenize("run")
    assert tokenize("Caroline's adoption")[0] == tokenize("Caroline")[0]
    cjk = tokenize("我喜欢喝咖啡")
    assert "咖啡" in cjk and "咖" in cjk
    assert content_hash("Hello  World") == content_hash("hello world ")
    assert numbers("budget 1,000 and 2.5 kg, room 12") == {"1000", "2.5", "12"}


def rows(*texts: str, scope: str = "s", kind: str = "knowledge") -> list[IndexRow]:
    return [IndexRow(uuid.uuid4().hex, scope, kind, t, None) for t in texts]


def test_bm25_matches_the_formula(tmp_path: Path):
    index = KeywordIndex(directory=tmp_path)
    docs = rows("apple banana", "apple cherry cherry", "durian")
    index.apply("u", IndexBatch(docs, (), Watermark("g", 3)))
    hits = index.search("u", "cherry", 10)
    assert [h.id for h in hits] == [docs[1].id]
    n, df, k1, b = 3, 1, 1.2, 0.75
    avgdl = (2 + 3 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * 2 * (k1 + 1) / (2 + k1 * (1 - b + b * 3 / avgdl))
    assert hits[0].score == pytest.approx(expected, rel=1e-5)
    both = index.search("u", "apple cherry", 10)
    assert both[0].id == docs[1].id and len(both) == 2
    assert index.search("u", "the of and", 10) == []


def test_bm25_removal_filters_persistence_and_compaction(tmp_path: Path):
    index = KeywordIndex(directory=tmp_path)
    docs = rows(*[f"note number {i} about gardening" for i in range(100)])
    other = rows("gardening club rules", scope="club", kind="rule")
    index.apply("u", IndexBatch([*docs, *other], (), Watermark("g", 101)))
    assert index.search("u", "gardening", 5, SearchFilter(scopes=frozenset({"club"})))[0].id == (
        other[0].id)
    index.apply("u", IndexBatch((), [d.id for d in docs[:80]], Watermark("g", 181)))
    assert index.size("u") == 21
    found = {h.id for h in index.search("u", "gardening", 200)}
    assert found == {d.id for d in docs[80:]} | {other[0].id}
    index.close()
    again = KeywordIndex(directory=tmp_path)
    assert again.watermark("u") == Watermark("g", 181)
    assert {h.id for h in again.search("u", "gardening", 200)} == found
    scores = again.score_ids("u", "gardening club", [other[0].id, docs[90].id, "missing"])
    assert set(scores) == {other[0].id, docs[90].id}
    assert scores[other[0].id] > scores[docs[90].id]
    again.close()


def test_a_summary_changes_no_other_memorys_keyword_score(tmp_path: Path):
    """Reproduction (issue 33, never worse): a session summary repeats its turns' words, and
    counted in the corpus statistics it made them look common, so the nightly ``summarize``
    changed every other memory's BM25 score (a fact's fell below a newer statement's that
    then outdated it). Summaries are left out of the statistics, and scored with them."""
    index = KeywordIndex(directory=tmp_path)
    facts = rows("my medical insurance is with Ping An", "bought pet insurance for the dog",
                 "how do rainbows form", "a quick noodle recipe please")
    index.apply("u", IndexBatch(facts, (), Watermark("g", 4)))
    query = "which insurance covers my medical bills"
    before = index.score_ids("u", query, [f.id for f in facts])
    summary = rows("Session (2 turns): my medical insurance; pet insurance for the dog",
                   kind="summary")
    index.apply("u", IndexBatch(summary, (), Watermark("g", 5)))
    after = index.score_ids("u", query, [f.id for f in facts] + [summary[0].id])
    assert {k: after[k] for k in before} == before
    assert after[summary[0].id] > 0  # the summary itself is still found by its words
    # the statistics hold through a save and a load, and a removal
    index.close()
    again = KeywordIndex(directory=tmp_path)
    assert again.score_ids("u", query, [f.id for f in facts]) == before
    again.apply("u", IndexBatch((), [summary[0].id], Watermark("g", 6)))
    assert again.score_ids("u", query, [f.id for f in facts]) == before
    # a shard of summaries alone is scored with its own statistics
    only = rows("Session: insurance talk", "Session: noodles", kind="summary")
    again.apply("v", IndexBatch(only, (), Watermark("g", 2)))
    assert [h.id for h in again.search("v", "insurance", 5)] == [only[0].id]
    again.close()
