"""Per-question retrieval metrics and bootstrap confidence intervals. Pure functions.

Evidence is turn-level: a question lists the turns that hold its answer, a
retriever returns records, and a record *covers* the turns it was made from
(one, or several when the write policy merged duplicates). For a question with
evidence set ``E``, each evidence turn gets the 1-based rank of the first
returned record covering it (``None`` when no record within the evaluated depth
covers it). Everything else follows from those ranks:

* ``recall@k`` = share of ``E`` ranked within ``k``;
* ``hit@k`` = 1 if any evidence is within ``k``;
* ``nDCG@k`` with binary gains per evidence turn; the ideal ranking puts the
  evidence records first, largest first;
* ``MRR`` = 1 / rank of the first evidence (0 if none within the depth);
* tokens to the evidence = the context a planner would read (the returned
  records' content, counted with the embedder's tokenizer) up to and including
  the record that completes the evidence.

Confidence intervals are percentile bootstraps over questions. They capture
the uncertainty from *which questions* were asked, not from which
conversations; the per-conversation table shows that second spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "Estimate",
    "bootstrap_mean",
    "bootstrap_paired_difference",
    "dcg",
    "hit_at",
    "mrr",
    "ndcg_at",
    "recall_at",
    "tokens_to_reach",
]

DEFAULT_BOOTSTRAP = 1000
DEFAULT_CONFIDENCE = 0.95

Ranks = Sequence[int | None]


def recall_at(ranks: Ranks, k: int) -> float:
    """Share of evidence turns covered within the top ``k``."""
    if not ranks:
        raise ValueError("a question needs at least one evidence turn")
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def hit_at(ranks: Ranks, k: int) -> float:
    """1.0 if any evidence turn is covered within the top ``k``."""
    return 1.0 if any(r is not None and r <= k for r in ranks) else 0.0


def mrr(ranks: Ranks) -> float:
    """Reciprocal rank of the first evidence (0.0 when none was found)."""
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def dcg(gains_at_rank: dict[int, int], k: int) -> float:
    return sum(g / math.log2(r + 1) for r, g in gains_at_rank.items() if r <= k)


def ndcg_at(ranks: Ranks, ideal_gains: Sequence[int], k: int) -> float:
    """nDCG@k with one unit of gain per evidence turn.

    ``ideal_gains`` lists how many evidence turns each evidence record covers
    (``[1, 1]`` for two turns stored as two records; ``[2]`` when they were
    merged into one record; an evidence turn that was never stored counts 1).
    """
    gains: dict[int, int] = {}
    for r in ranks:
        if r is not None:
            gains[r] = gains.get(r, 0) + 1
    ideal = sorted(ideal_gains, reverse=True)
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k]))
    if best <= 0:
        return 0.0
    return min(1.0, dcg(gains, k) / best)


def tokens_to_reach(ranks: Ranks, cumulative_tokens: Sequence[int]) -> tuple[int | None, ...]:
    """Context tokens read to reach each evidence turn (``None``: never reached).

    ``cumulative_tokens[i]`` is the number of tokens of the records at ranks
    ``1..i+1``.
    """
    return tuple(
        None if r is None or r > len(cumulative_tokens) else int(cumulative_tokens[r - 1])
        for r in ranks
    )


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with its bootstrap confidence interval."""

    mean: float
    low: float
    high: float
    n: int

    def excludes(self, value: float) -> bool:
        """True when ``value`` lies outside the interval."""
        return value < self.low or value > self.high

    def __format__(self, spec: str) -> str:
        spec = spec or ".3f"
        return f"{self.mean:{spec}} [{self.low:{spec}}, {self.high:{spec}}]"

    def to_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def _resample_means(
    values: npt.NDArray[np.float64], n_boot: int, seed: int
) -> npt.NDArray[np.float64]:
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    out = np.empty(n_boot, dtype=np.float64)
    step = max(1, 2_000_000 // max(n, 1))  # bound the temporary index matrix
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[idx].mean(axis=1)
    return out


def bootstrap_mean(
    values: Sequence[float] | npt.NDArray[np.float64],
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Estimate:
    """Mean of ``values`` with a percentile bootstrap interval."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = float(arr.mean())
    if arr.size == 1 or n_boot < 1:
        return Estimate(mean, mean, mean, int(arr.size))
    means = _resample_means(arr, n_boot, seed)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return Estimate(mean, float(low), float(high), int(arr.size))


def bootstrap_paired_difference(
    a: Sequence[float] | npt.NDArray[np.float64],
    b: Sequence[float] | npt.NDArray[np.float64],
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Estimate:
    """``mean(a - b)`` over the same questions, with a paired bootstrap interval.

    Pairing removes the between-question variance both retrievers share, so a
    difference can be significant even when the two intervals overlap.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError("paired samples must have the same length")
    return bootstrap_mean(x - y, n_boot=n_boot, confidence=confidence, seed=seed)
