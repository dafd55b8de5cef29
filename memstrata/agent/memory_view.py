"""The one seam between the context builder and the memory.

:func:`brief` asks the memory for what the planner should see for a goal in a
scope: pending confirmations (open conflicts), the top recalled long-term
memories, and lessons from past trajectories. It is the only place that knows
how; switching to ``MemoryManager.briefing`` (from the consolidation work)
changes this function only.
"""

from __future__ import annotations

from typing import Any

from .context import Briefing, ContextSettings, MemoryLine

__all__ = ["brief"]

_FACT_TYPES = ("profile", "preference", "knowledge", "rule", "event")
_LESSON_TYPES = ("experience", "summary")


def brief(memory: Any, user_id: str, scope: str, query: str,
          settings: ContextSettings) -> Briefing:
    """Confirmations, memories and lessons for ``query`` in ``scope``.

    With ``MemoryManager.briefing`` (the consolidation package): its questions,
    its goal-relevant lessons and its profile facts (pinned first), plus one
    recall for the most relevant other facts. Without it: conflicts plus one
    recall over facts and lessons together (one query embedding, one index
    pass; very relevant facts can crowd lessons out - the price of the budget).
    """
    briefing = getattr(memory, "briefing", None)
    if callable(briefing):
        b = briefing(user_id, scope, goal=query, lessons_k=settings.lessons_k,
                     confirmations_k=settings.confirmations_k,
                     profile_k=settings.memories_k)
        hits = memory.recall(user_id, query, scope=scope, types=_FACT_TYPES,
                             k=settings.memories_k)
        seen: set[str] = set()
        memories: list[MemoryLine] = []
        for rec, score in [(r, 1.0) for r in b.profile] + [(h.record, h.score) for h in hits]:
            if rec.id not in seen and len(memories) < settings.memories_k:
                seen.add(rec.id)
                memories.append(MemoryLine(rec.id, rec.content, round(score, 3)))
        return Briefing([c.question for c in b.confirmations], memories,
                        [MemoryLine(r.id, r.content) for r in b.lessons], source="briefing")
    confirmations = []
    for group in memory.conflicts(user_id, scope=scope)[: settings.confirmations_k]:
        options = " vs ".join(f"'{r.content}'" for r in group[:3])
        confirmations.append(f"conflicting memories: {options} - ask which is right")
    hits = memory.recall(user_id, query, scope=scope, types=_FACT_TYPES + _LESSON_TYPES,
                         k=min(10, settings.memories_k + settings.lessons_k))
    memories = [MemoryLine(h.id, h.content, round(h.score, 3)) for h in hits
                if h.record.type.value in _FACT_TYPES][: settings.memories_k]
    lessons = [MemoryLine(h.id, h.content, round(h.score, 3)) for h in hits
               if h.record.type.value in _LESSON_TYPES][: settings.lessons_k]
    return Briefing(confirmations, memories, lessons, source="recall")
