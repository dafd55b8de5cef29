"""The optional second stage of recall: a :class:`Reranker` reorders the candidates.

``recall(query, reranker=r)`` ranks as usual with the retrieval policy, hands
the best ``policy.candidates`` hits (not only ``top_k``) to ``r.rerank`` and
cuts what comes back to ``top_k``. The policy's relevance gate has already run:
a reranker never sees a candidate the policy rejected.

The contract, checked by :func:`apply_reranker` before anything is counted as
used:

* it may **reorder** the hits and **drop** any of them;
* it must **never add** a hit that was not offered, nor return one twice;
* it must **never change a record** (``hit.record`` stays the offered one);
* the ``score`` of a returned hit is the reranker's (``dataclasses.replace(hit,
  score=...)``); ``hit.parts`` keeps the first stage's explanation. Recall
  does not re-sort: the returned order is the final order.

A breach raises :class:`~memstrata.errors.InvalidInputError` - the reranker was
passed in by the caller - and nothing is recorded as used.

Built in: :class:`SlotCapReranker` keeps at most N hits per fact slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memstrata.errors import InvalidInputError
from memstrata.memory._rerankers import SlotCapReranker
from memstrata.types import RecallHit

__all__ = ["Reranker", "SlotCapReranker", "apply_reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Reorders (and may drop) recall candidates; see the module docstring for the contract."""

    def rerank(self, query: str, hits: Sequence[RecallHit]) -> list[RecallHit]:
        """The hits worth keeping for ``query``, best first (a subset of ``hits``)."""
        ...


def apply_reranker(
    reranker: Reranker, query: str, hits: Sequence[RecallHit], top_k: int
) -> list[RecallHit]:
    """Run ``reranker`` on ``hits``, enforce the contract, and cut to ``top_k``.

    Raises:
        InvalidInputError: the reranker added a hit, returned one twice or
            changed a record.
    """
    offered = {hit.id: hit for hit in hits}
    out = list(reranker.rerank(query, tuple(hits)))
    seen: set[str] = set()
    name = type(reranker).__name__
    for hit in out:
        original = offered.get(hit.id)
        if original is None:
            raise InvalidInputError(
                f"reranker {name} returned {hit.id!r}, which was not among the candidates"
            )
        if hit.id in seen:
            raise InvalidInputError(f"reranker {name} returned {hit.id!r} twice")
        if hit.record is not original.record and hit.record != original.record:
            raise InvalidInputError(f"reranker {name} changed the record {hit.id!r}")
        seen.add(hit.id)
    return out[:top_k]
