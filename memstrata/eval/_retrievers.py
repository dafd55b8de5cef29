"""The retrievers an evaluation compares, behind one small protocol.

* ``dense`` - cosine similarity of the query embedding only;
* ``keyword`` - BM25 only;
* ``rrf`` - reciprocal rank fusion of the two lists (``1 / (60 + rank)``), the
  usual hybrid baseline;
* ``default`` - :meth:`MemoryManager.recall` exactly as an application calls
  it (weighted score fusion, threshold, decay, status), read-only.

The baselines read the raw candidate scores through
:meth:`LongTermMemory.candidates`, the same candidates ``recall`` fuses, so a
difference between them is the fusion and the policy, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from memstrata.memory.embedder import embed_queries
from memstrata.memory.manager import MemoryManager
from memstrata.memory.vector import NO_FILTER
from memstrata.policies.retrieval import MAX_TOP_K, RetrievalPolicy

__all__ = [
    "BASELINES",
    "DenseRetriever",
    "HybridRetriever",
    "KeywordRetriever",
    "RRFRetriever",
    "Ranked",
    "Retriever",
    "builtin_retriever",
]

DEFAULT_RRF_K = 60


@dataclass(frozen=True, slots=True)
class Ranked:
    """One returned record, best first."""

    record_id: str
    score: float
    #: the fused relevance before decay / status weights (``recall`` only)
    relevance: float | None = None
    #: score parts for explanation (dense, keyword, decay, ...)
    parts: dict[str, float] = field(default_factory=dict)
    kind: Literal["ranked"] = "ranked"


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks a user's memories for a query."""

    @property
    def name(self) -> str: ...

    def retrieve(
        self, memory: MemoryManager, user_id: str, query: str, depth: int
    ) -> list[Ranked]:
        """Up to ``depth`` records, best first."""
        ...


def _raw(
    memory: MemoryManager, user_id: str, query: str, depth: int
) -> tuple[dict[str, float], dict[str, float]]:
    qvec = embed_queries(memory.embedder, [query])[0]
    return memory.longterm.candidates(user_id, query, qvec, NO_FILTER, depth)


def _sorted(scores: dict[str, float], depth: int, part: str) -> list[Ranked]:
    best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]
    return [Ranked(i, s, parts={part: s}) for i, s in best]


@dataclass(frozen=True, slots=True)
class DenseRetriever:
    """Cosine similarity to the query embedding, nothing else."""

    name: str = "dense"

    def retrieve(self, memory: MemoryManager, user_id: str, query: str, depth: int
                 ) -> list[Ranked]:
        dense, _ = _raw(memory, user_id, query, depth)
        return _sorted(dense, depth, "dense")


@dataclass(frozen=True, slots=True)
class KeywordRetriever:
    """BM25 over the indexed text (context + content), nothing else."""

    name: str = "keyword"

    def retrieve(self, memory: MemoryManager, user_id: str, query: str, depth: int
                 ) -> list[Ranked]:
        _, keyword = _raw(memory, user_id, query, depth)
        return _sorted(keyword, depth, "keyword")


@dataclass(frozen=True, slots=True)
class RRFRetriever:
    """Reciprocal rank fusion: ``sum 1 / (k + rank)`` over the dense and keyword lists."""

    name: str = "rrf"
    k: int = DEFAULT_RRF_K

    def retrieve(self, memory: MemoryManager, user_id: str, query: str, depth: int
                 ) -> list[Ranked]:
        dense, keyword = _raw(memory, user_id, query, depth)
        fused: dict[str, float] = {}
        parts: dict[str, dict[str, float]] = {}
        for label, scores in (("dense", dense), ("keyword", keyword)):
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]
            for rank, (memory_id, score) in enumerate(ranked, start=1):
                if score <= 0:
                    continue
                fused[memory_id] = fused.get(memory_id, 0.0) + 1.0 / (self.k + rank)
                parts.setdefault(memory_id, {})[label] = score
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]
        return [Ranked(i, s, parts=parts[i]) for i, s in best]


@dataclass(frozen=True, slots=True)
class HybridRetriever:
    """:meth:`MemoryManager.recall`, read-only, with an optional policy override.

    ``policy=None`` is the manager's configured policy - the library default
    unless the evaluation config changes it. ``min_relevance`` overrides the
    threshold (``0.0`` returns everything, for threshold sweeps).
    """

    name: str = "default"
    policy: RetrievalPolicy | None = None
    min_relevance: float | None = None

    def retrieve(self, memory: MemoryManager, user_id: str, query: str, depth: int
                 ) -> list[Ranked]:
        hits = memory.recall(
            user_id, query, k=min(depth, MAX_TOP_K), policy=self.policy,
            min_relevance=self.min_relevance, record_use=False,
        )
        return [
            Ranked(
                h.id, h.score, relevance=h.relevance,
                parts={"dense": h.dense, "keyword": h.keyword, "decay": h.decay,
                       "status": h.status_weight, "currency": h.currency},
            )
            for h in hits
        ]


#: the comparison every evaluation runs unless told otherwise
BASELINES: tuple[str, ...] = ("dense", "keyword", "rrf", "default")


def builtin_retriever(name: str) -> Retriever:
    """A built-in retriever by name (``dense``, ``keyword``, ``rrf``, ``default``)."""
    table: dict[str, Retriever] = {
        "dense": DenseRetriever(),
        "keyword": KeywordRetriever(),
        "rrf": RRFRetriever(),
        "default": HybridRetriever(),
    }
    if name not in table:
        raise KeyError(name)
    return table[name]
