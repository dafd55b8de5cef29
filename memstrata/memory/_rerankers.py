"""Built-in rerankers (see :mod:`memstrata.memory.rerank` for the contract)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memstrata.types import MemoryRecord, RecallHit

__all__ = ["SlotCapReranker"]


@dataclass(frozen=True, slots=True)
class SlotCapReranker:
    """Keep at most ``per_slot`` hits per fact slot, so one fact cannot fill ``top_k``.

    Hits are grouped by slot ``(subject, attribute)`` - across scopes - or, for a
    record without a slot, by its conflict group; the first ``per_slot`` of each
    group, in the order given (the policy's ranking), stay. Hits in no group
    pass through. It only drops: order and scores are unchanged, and the places
    freed below ``top_k`` go to the next candidates.

    The trade-off: with ``per_slot=1`` a pending conflict shows only its
    best-ranked side (the other value is still stored and listed by
    ``conflicts()``); ``per_slot=2`` keeps both sides of a two-way conflict.
    """

    #: how many hits of one slot (or conflict group) to keep
    per_slot: int = 1

    def __post_init__(self) -> None:
        if self.per_slot < 1:
            raise ValueError("per_slot must be positive")

    def rerank(self, query: str, hits: Sequence[RecallHit]) -> list[RecallHit]:
        kept: dict[tuple[str, ...], int] = {}
        out: list[RecallHit] = []
        for hit in hits:
            group = _group(hit.record)
            if group is not None:
                n = kept.get(group, 0)
                if n >= self.per_slot:
                    continue
                kept[group] = n + 1
            out.append(hit)
        return out


def _group(record: MemoryRecord) -> tuple[str, ...] | None:
    if record.slot is not None:
        return ("slot", *record.slot.key)
    if record.conflict_group is not None:
        return ("conflict", record.conflict_group)
    return None
