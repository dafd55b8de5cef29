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
    confirmations = []
    for group in memory.conflicts(user_id, scope=scope)[: settings.confirmations_k]:
        options = " vs ".join(f"'{r.content}'" for r in group[:3])
        confirmations.append(f"conflicting memories: {options} - ask which is right")
    # one recall for facts and lessons together (one query embedding, one index pass:
    # half the cost of two); lessons can be crowded out by very relevant facts, which
    # is the trade-off for a per-turn budget
    hits = memory.recall(user_id, query, scope=scope, types=_FACT_TYPES + _LESSON_TYPES,
                         k=min(10, settings.memories_k + settings.lessons_k))
    memories = [MemoryLine(h.id, h.content, round(h.score, 3)) for h in hits
                if h.record.type.value in _FACT_TYPES][: settings.memories_k]
    lessons = [MemoryLine(h.id, h.content, round(h.score, 3)) for h in hits
               if h.record.type.value in _LESSON_TYPES][: settings.lessons_k]
    return Briefing(confirmations, memories, lessons, source="recall")
