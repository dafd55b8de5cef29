"""Metric definitions on hand-made rankings (no model needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memstrata.eval import (
    Ranked,
    RetrieverRun,
    bootstrap_mean,
    bootstrap_paired_difference,
    hit_at,
    mrr,
    ndcg_at,
    recall_at,
    threshold_sweep,
    top_k_sweep,
)
from memstrata.eval._metrics import tokens_to_reach
from memstrata.eval._result import QuestionResult


def test_recall_hit_and_mrr_from_evidence_ranks():
    ranks = [2, None, 7]
    assert recall_at(ranks, 1) == 0.0
    assert recall_at(ranks, 2) == pytest.approx(1 / 3)
    assert recall_at(ranks, 10) == pytest.approx(2 / 3)
    assert hit_at(ranks, 1) == 0.0 and hit_at(ranks, 2) == 1.0
    assert mrr(ranks) == 0.5
    assert mrr([None, None]) == 0.0
    with pytest.raises(ValueError):
        recall_at([], 5)


def test_ndcg_binary_gains_and_ideal_ordering():
    # one evidence turn at rank 1 is perfect; at rank 3 it is 1/log2(4) = 0.5
    assert ndcg_at([1], [1], 10) == pytest.approx(1.0)
    assert ndcg_at([3], [1], 10) == pytest.approx(0.5)
    assert ndcg_at([3], [1], 2) == 0.0
    # two evidence turns at ranks 1 and 3, ideal ranks 1 and 2
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at([1, 3], [1, 1], 10) == pytest.approx(expected)
    # two turns merged into one record at rank 1: both gains there, ideal [2] -> perfect
    assert ndcg_at([1, 1], [2], 10) == pytest.approx(1.0)
    # an evidence turn that was never stored still counts in the ideal
    assert ndcg_at([1, None], [1, 1], 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_tokens_to_reach_reads_cumulative_context():
    cumulative = [10, 25, 60]
    assert tokens_to_reach([1, 3, None], cumulative) == (10, 60, None)
    assert tokens_to_reach([4], cumulative) == (None,)


def test_bootstrap_interval_contains_the_mean_and_is_reproducible():
    rng = np.random.default_rng(1)
    values = rng.random(400)
    a = bootstrap_mean(values, n_boot=500, seed=3)
    b = bootstrap_mean(values, n_boot=500, seed=3)
    assert a == b
    assert a.low < a.mean < a.high
    assert a.mean == pytest.approx(values.mean())
    # the interval shrinks with more data (roughly 1/sqrt(n))
    wide = bootstrap_mean(values[:25], n_boot=500, seed=3)
    assert (wide.high - wide.low) > 2 * (a.high - a.low)
    assert a.excludes(a.high + 0.01) and not a.excludes(a.mean)
    assert math.isnan(bootstrap_mean([], n_boot=10).mean)
    one = bootstrap_mean([0.5])
    assert (one.low, one.mean, one.high) == (0.5, 0.5, 0.5)


def test_paired_difference_sees_a_consistent_small_gain():
    rng = np.random.default_rng(2)
    base = rng.random(300)
    better = base + 0.02  # same questions, always slightly better
    diff = bootstrap_paired_difference(better, base, n_boot=300)
    assert diff.mean == pytest.approx(0.02)
    assert diff.low > 0  # significant although the two marginal intervals overlap
    unpaired_a, unpaired_b = bootstrap_mean(better), bootstrap_mean(base)
    assert unpaired_a.low < unpaired_b.high
    with pytest.raises(ValueError):
        bootstrap_paired_difference([1.0, 2.0], [1.0])


def _question(ranks, relevant, relevance, cumulative, evidence=("e1",)) -> QuestionResult:
    items = tuple(Ranked(f"r{i}", 1.0 - i / 10, relevance=rel)
                  for i, rel in enumerate(relevance))
    tokens = tuple(None if r is None else cumulative[r - 1] for r in ranks)
    return QuestionResult(
        probe_id="p", user="u", question="q?", category="1", evidence_ids=tuple(evidence),
        evidence_ranks=tuple(ranks), evidence_tokens=tokens, ideal_gains=(1,) * len(ranks),
        retrieved=items, relevant=tuple(relevant), cumulative_tokens=tuple(cumulative),
        latency_ms=1.0,
    )


def test_question_result_token_views():
    q = _question([2, 3], [False, True, True], [0.9, 0.5, 0.1], [5, 12, 20],
                  evidence=("a", "b"))
    assert q.tokens_to_first == 12 and q.tokens_to_all == 20
    assert q.recall_within(11) == 0.0
    assert q.recall_within(12) == 0.5
    assert q.recall_within(100) == 1.0
    missing = _question([2, None], [False, True], [0.9, 0.5], [5, 12], evidence=("a", "b"))
    assert missing.tokens_to_all is None


def test_threshold_sweep_replays_the_relevance_cut():
    # evidence at position 2 with relevance 0.5; position 1 is noise with 0.9
    q = _question([2], [False, True, False], [0.9, 0.5, 0.1], [5, 12, 20])
    run = RetrieverRun("t", "", (q,), depth=3)
    low, mid, high = threshold_sweep(run, [0.0, 0.6, 0.95], k=2)
    assert (low.recall, low.precision, low.returned, low.tokens) == (1.0, 0.5, 2, 12)
    assert (mid.recall, mid.precision, mid.returned) == (0.0, 0.0, 1)
    assert (high.recall, high.precision, high.empty) == (0.0, None, 1.0)
    k1 = threshold_sweep(run, [0.0], k=1)[0]
    assert k1.recall == 0.0 and k1.returned == 1


def test_top_k_sweep_recall_precision_tokens():
    q = _question([2], [False, True, False], [0.9, 0.5, 0.1], [5, 12, 20])
    run = RetrieverRun("t", "", (q,), depth=3)
    one, two, five = top_k_sweep(run, [1, 2, 5])
    assert (one.recall, one.precision, one.tokens) == (0.0, 0.0, 5)
    assert (two.recall, two.precision, two.tokens) == (1.0, 0.5, 12)
    assert five.returned == 3 and five.tokens == 20
    with pytest.raises(ValueError):
        top_k_sweep(run, [0])


def test_threshold_sweep_needs_relevance():
    q = _question([1], [True], [None], [3])  # a baseline run: no fused relevance
    with pytest.raises(ValueError, match="relevance"):
        threshold_sweep(RetrieverRun("dense", "", (q,), depth=1), [0.1], k=1)
