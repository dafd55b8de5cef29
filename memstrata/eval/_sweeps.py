"""Sweeps computed from one run: the relevance threshold and top-k trade-offs.

Both read a run's ranked lists, so they cost no further recalls:

* :func:`threshold_sweep` needs a run made with ``min_relevance=0`` (every
  candidate keeps its fused relevance); for each threshold it keeps what recall
  would return - candidates at or above it, best first, cut at ``k`` - and
  reports evidence recall, the *precision of what is returned* (share of
  returned records that hold evidence), and how often nothing is returned.
  That is the "noise is worse than absence" trade-off in numbers.
* :func:`top_k_sweep` reports recall, precision and context tokens per ``k``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from memstrata.eval._result import RetrieverRun
from memstrata.eval._retrievers import Ranked

__all__ = ["SweepPoint", "threshold_sweep", "top_k_sweep"]


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One setting of a sweep, averaged over questions."""

    #: the threshold (threshold sweep) or k (top-k sweep)
    value: float
    recall: float
    #: mean over questions that got anything back (None when none did)
    precision: float | None
    #: share of questions for which nothing was returned
    empty: float
    #: mean number of records returned
    returned: float
    #: mean context tokens of what was returned
    tokens: float


def threshold_sweep(run: RetrieverRun, thresholds: Iterable[float], *, k: int) -> list[SweepPoint]:
    """What ``recall(min_relevance=t, k=k)`` would return, for each ``t``."""
    if any(item.relevance is None for q in run.questions for item in q.retrieved):
        raise ValueError("a threshold sweep needs a recall run (items carry relevance)")
    out = []
    for t in thresholds:
        recalls, precisions, sizes, tokens = [], [], [], []
        empty = 0
        for q in run.questions:
            kept = [i for i, item in enumerate(q.retrieved) if _gate(item) >= t][:k]
            ranks = {i + 1 for i in kept}
            recalls.append(sum(1 for r in q.evidence_ranks if r in ranks) / len(q.evidence_ranks))
            sizes.append(len(kept))
            if kept:
                precisions.append(sum(q.relevant[i] for i in kept) / len(kept))
                tokens.append(_tokens_of(q.cumulative_tokens, kept))
            else:
                empty += 1
                tokens.append(0)
        out.append(_point(t, recalls, precisions, sizes, tokens, empty, len(run.questions)))
    return out


def _point(value: float, recalls: list[float], precisions: list[float], sizes: list[int],
           tokens: list[int], empty: int, questions: int) -> SweepPoint:
    """Means over the questions of one sweep setting."""
    n = max(questions, 1)
    return SweepPoint(
        value=float(value), recall=float(np.mean(recalls)) if recalls else 0.0,
        precision=float(np.mean(precisions)) if precisions else None,
        empty=empty / n, returned=float(np.mean(sizes)) if sizes else 0.0,
        tokens=float(np.mean(tokens)) if tokens else 0.0,
    )


def _gate(item: Ranked) -> float:
    """The value ``recall`` compares with ``min_relevance``: the strongest signal.

    :attr:`ScoreParts.gate <memstrata.types.ScoreParts.gate>`, read back from the
    stored ``dense`` and ``keyword`` parts (a run on disk has no ScoreParts).
    """
    if "dense" in item.parts and "keyword" in item.parts:
        return float(max(item.parts["dense"], item.parts["keyword"]))
    return item.relevance if item.relevance is not None else 0.0


def _tokens_of(cumulative: tuple[int, ...], kept: list[int]) -> int:
    total = 0
    for i in kept:
        total += cumulative[i] - (cumulative[i - 1] if i > 0 else 0)
    return total


def top_k_sweep(run: RetrieverRun, ks: Iterable[int]) -> list[SweepPoint]:
    """Recall@k, precision@k and context tokens of the first k records, per ``k``."""
    out = []
    for k in ks:
        if k < 1:
            raise ValueError("k must be positive")
        recalls, precisions, sizes, tokens = [], [], [], []
        empty = 0
        for q in run.questions:
            n = min(k, len(q.retrieved))
            recalls.append(q.recall(k))
            sizes.append(n)
            if n:
                precisions.append(sum(q.relevant[:n]) / n)
                tokens.append(q.cumulative_tokens[n - 1])
            else:
                empty += 1
                tokens.append(0)
        out.append(_point(k, recalls, precisions, sizes, tokens, empty, len(run.questions)))
    return out
