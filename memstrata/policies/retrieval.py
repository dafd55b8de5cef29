"""Retrieval policy: how recalled candidates are scored, filtered and cut.

``score = relevance x decay x confidence x status_weight``

* ``relevance`` fuses the dense cosine similarity and the keyword (BM25) score
  with weights, not ranks: ``w * dense + (1 - w) * bm25 / (bm25 + saturation)``.
  Score fusion keeps the *size* of each signal, so a strong keyword match on a
  rare name beats a lukewarm paraphrase, and a threshold means the same thing
  whatever else is in the candidate set.
* ``decay`` halves every ``half_life[type]`` since the record was last used
  (or written), down to ``decay_floor``; pinned records do not decay.
* ``status_weight`` ranks demoted (and expired) records below active ones.

:meth:`RetrievalPolicy.score` is the whole formula for one candidate: it takes
the raw signals (cosine, BM25, type, age, pinned, confidence, status, expired)
and returns a :class:`~memstrata.types.ScoreParts` - every factor and the
product - or ``None`` when the gate below rejects the candidate. Recall calls
nothing else, so what is documented here is what ranks.

A candidate is returned only when its *strongest* signal - the cosine
similarity or the saturated keyword score - reaches ``min_relevance``: noise is
worse than absence. The gate is on the strongest signal, not on the fused
relevance, because the fusion weights are tuned for *ranking*: with
``dense_weight`` 0.4 a paraphrase that shares no word with the question
(cosine 0.35-0.45: "What can I cook for her?" -> "I'm vegetarian") would fuse
to 0.14-0.18 and be cut by any useful threshold, although the model is quite
sure of it. Unrelated memories stay below 0.2 on both signals.

The defaults are measured (``docs/eval.md``, LoCoMo development conversations,
paired bootstrap): keyword evidence outweighs MiniLM similarity on
conversational memory (names, objects, dates), so ``dense_weight`` is 0.4 and a
BM25 score of 10 - a strong match on two rare words - is worth half the keyword
signal. Decay keeps recency as a preference, not a veto: with a floor of 0.5 a
year-old exact match lost to a fresh lukewarm one, and recall@1 dropped by 0.04;
a floor of 0.8 keeps the ordering among equals and loses nothing measurable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from memstrata.types import MemoryType, ScoreParts, Status

__all__ = ["DEFAULT_HALF_LIFE", "RetrievalPolicy"]

DEFAULT_HALF_LIFE: Mapping[MemoryType, timedelta | None] = MappingProxyType(
    {
        MemoryType.PROFILE: None,
        MemoryType.PREFERENCE: timedelta(days=180),
        MemoryType.KNOWLEDGE: timedelta(days=365),
        MemoryType.EVENT: timedelta(days=365),
        MemoryType.EXPERIENCE: timedelta(days=90),
        MemoryType.RULE: None,
        MemoryType.SUMMARY: timedelta(days=180),
    }
)
DEFAULT_STATUS_WEIGHT: Mapping[Status, float] = MappingProxyType(
    {
        Status.ACTIVE: 1.0,
        Status.PENDING_CONFIRMATION: 0.9,
        Status.DEMOTED: 0.5,
    }
)
DEFAULT_TOP_K = 5
DEFAULT_MIN_RELEVANCE = 0.25
DEFAULT_DENSE_WEIGHT = 0.4
DEFAULT_KEYWORD_SATURATION = 10.0
DEFAULT_CANDIDATES = 20
DEFAULT_DECAY_FLOOR = 0.8
MAX_TOP_K = 100


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """Parameters of recall ranking. All are plain numbers a user can sweep."""

    top_k: int = DEFAULT_TOP_K
    min_relevance: float = DEFAULT_MIN_RELEVANCE
    #: weight of the dense score in the fusion; the keyword score gets the rest
    dense_weight: float = DEFAULT_DENSE_WEIGHT
    #: BM25 score at which the keyword signal is worth 0.5
    keyword_saturation: float = DEFAULT_KEYWORD_SATURATION
    #: how many candidates each retriever proposes before fusion (at least top_k);
    #: 20 ranked the top 10 exactly as 50 did on LoCoMo and costs ~1 ms less
    candidates: int = DEFAULT_CANDIDATES
    half_life: Mapping[MemoryType, timedelta | None] = field(
        default_factory=lambda: DEFAULT_HALF_LIFE
    )
    decay_floor: float = DEFAULT_DECAY_FLOOR
    status_weight: Mapping[Status, float] = field(default_factory=lambda: DEFAULT_STATUS_WEIGHT)

    def __post_init__(self) -> None:
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be in 1..{MAX_TOP_K}")
        if not 0.0 <= self.min_relevance <= 1.0:
            raise ValueError("min_relevance must be in [0, 1]")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        if self.keyword_saturation <= 0:
            raise ValueError("keyword_saturation must be positive")
        if self.candidates < 1:
            raise ValueError("candidates must be positive")
        if not 0.0 <= self.decay_floor <= 1.0:
            raise ValueError("decay_floor must be in [0, 1]")
        half_life = dict(DEFAULT_HALF_LIFE)
        half_life.update(self.half_life)
        weights = dict(DEFAULT_STATUS_WEIGHT)
        weights.update(self.status_weight)
        object.__setattr__(self, "half_life", MappingProxyType(half_life))
        object.__setattr__(self, "status_weight", MappingProxyType(weights))

    def score(
        self,
        *,
        dense: float,
        bm25: float,
        kind: MemoryType,
        age_seconds: float,
        pinned: bool = False,
        confidence: float = 1.0,
        status: Status = Status.ACTIVE,
        expired: bool = False,
    ) -> ScoreParts | None:
        """Score one candidate from its raw signals; ``None`` when the gate rejects it.

        ``dense`` is the cosine similarity, ``bm25`` the raw keyword score (0.0
        when no query term matched), ``age_seconds`` the time since the record
        was last used (or written). This is the hot path of recall: one call and,
        for an admitted candidate, one :class:`ScoreParts` - the factors are
        computed once and multiplied in the documented order, so
        ``relevance * decay * confidence * status_weight == score`` exactly.
        """
        keyword = self.keyword_signal(bm25)
        if not max(dense, keyword) >= self.min_relevance:
            return None
        relevance = self.dense_weight * max(0.0, dense) + (1.0 - self.dense_weight) * keyword
        decay = self.decay_after(kind, age_seconds, pinned=pinned)
        weight = self.weight_of(status, expired=expired)
        return ScoreParts(
            dense=dense,
            bm25=bm25,
            keyword=keyword,
            relevance=relevance,
            decay=decay,
            confidence=confidence,
            status_weight=weight,
            score=relevance * decay * confidence * weight,
        )

    def keyword_signal(self, bm25: float) -> float:
        """BM25 squashed into [0, 1): ``bm25 / (bm25 + saturation)``."""
        return bm25 / (bm25 + self.keyword_saturation) if bm25 > 0 else 0.0

    def admits(self, dense: float, bm25: float) -> bool:
        """Is either retriever convinced? ``max(cosine, keyword signal) >= min_relevance``."""
        return max(dense, self.keyword_signal(bm25)) >= self.min_relevance

    def relevance(self, dense: float, bm25: float) -> float:
        """Fused relevance in [0, 1] of one candidate."""
        dense_part = max(0.0, dense)
        return self.dense_weight * dense_part + (1.0 - self.dense_weight) * self.keyword_signal(
            bm25
        )

    def decay(
        self, kind: MemoryType, last_used: datetime, now: datetime, *, pinned: bool = False
    ) -> float:
        """Multiplier in [decay_floor, 1] for a record last used at ``last_used``."""
        return self.decay_after(kind, (now - last_used).total_seconds(), pinned=pinned)

    def decay_after(self, kind: MemoryType, age_seconds: float, *, pinned: bool = False
                    ) -> float:
        """:meth:`decay` for a record unused for ``age_seconds`` (the hot path of recall)."""
        half_life = self.half_life.get(kind)
        if pinned or half_life is None:
            return 1.0
        fresh = math.pow(0.5, max(0.0, age_seconds) / half_life.total_seconds())
        return self.decay_floor + (1.0 - self.decay_floor) * fresh

    def weight_of(self, status: Status, *, expired: bool = False) -> float:
        """Status weight; an expired record weighs as a demoted one."""
        weight = self.status_weight.get(status, 0.0)
        if expired:
            weight = min(weight, self.status_weight.get(Status.DEMOTED, 0.0))
        return weight
