"""The one seam between the agent and the memory.

:class:`MemoryView` is what the agent uses of a memory - the task and step
store, the call log's transactions, the clock, the embedder and four calls -
and :class:`~memstrata.MemoryManager` satisfies it structurally (mypy checks
that below). :func:`brief` asks the memory for what the planner should see for
a goal in a scope: pending confirmations (open conflicts), the top recalled
long-term memories, and lessons from past trajectories. It is the only place
that knows how.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from memstrata._sql import Transactions
from memstrata.clock import Clock
from memstrata.memory.briefing import (
    DEFAULT_CONFIRMATIONS_K,
    DEFAULT_LESSONS_K,
    DEFAULT_PROFILE_K,
    Briefing,
    dated,
)
from memstrata.memory.embedder import Embedder
from memstrata.memory.episodic import EpisodicMemory
from memstrata.types import MemoryInput, MemoryType, RecallHit, Source, WriteDecision

from .context import ContextSettings, MemoryContext, MemoryLine

if TYPE_CHECKING:
    from memstrata.memory.manager import MemoryManager

__all__ = ["MemoryView", "brief"]

_FACT_TYPES = ("profile", "preference", "knowledge", "rule", "event")


class MemoryView(Protocol):
    """What the agent needs of a memory: a :class:`~memstrata.MemoryManager` is one.

    The signatures are the manager's, cut down to the parameters the agent
    passes (an implementation may accept more). Read-only properties, so a
    plain attribute of a subtype (``Database`` for ``db``) satisfies them.
    """

    @property
    def clock(self) -> Clock:
        """The time source for runs, tool caches and breakers."""
        ...

    @property
    def db(self) -> Transactions:
        """Where the model-call log is written and read."""
        ...

    @property
    def episodic(self) -> EpisodicMemory:
        """Tasks, steps and trajectories: the run's only record."""
        ...

    @property
    def embedder(self) -> Embedder:
        """Counts context tokens (unless a counter is given) and embeds for drift."""
        ...

    def recall(
        self,
        user_id: str,
        query: str,
        *,
        scope: str | Iterable[str] | None = None,
        types: MemoryType | str | Iterable[MemoryType | str] | None = None,
        k: int | None = None,
    ) -> list[RecallHit]: ...

    def briefing(
        self,
        user_id: str,
        scope: str | None = None,
        goal: str | None = None,
        *,
        lessons_k: int = DEFAULT_LESSONS_K,
        profile_k: int = DEFAULT_PROFILE_K,
        confirmations_k: int = DEFAULT_CONFIRMATIONS_K,
    ) -> Briefing: ...

    def remember(
        self,
        user_id: str,
        item: MemoryInput | str | dict[str, Any],
        *,
        type: MemoryType | str | None = None,
        scope: str | None = None,
        confidence: float | None = None,
        source: Source | str | None = None,
        task_id: str | None = None,
        step_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        verified: bool | None = None,
    ) -> WriteDecision: ...

    def forget(self, user_id: str, memory_id: str, *, reason: str = "user request"
               ) -> list[str]: ...


if TYPE_CHECKING:
    def _a_manager_is_a_view(manager: MemoryManager) -> MemoryView:
        return manager  # mypy fails here if MemoryManager stops satisfying MemoryView


def brief(memory: MemoryView, user_id: str, scope: str, query: str,
          settings: ContextSettings) -> MemoryContext:
    """Confirmations, memories and lessons for ``query`` in ``scope``.

    ``MemoryManager.briefing`` gives the questions, the goal-relevant lessons
    and the profile facts (pinned first); one recall adds the most relevant
    other facts, after the profile facts, up to ``memories_k``.
    """
    b = memory.briefing(user_id, scope, goal=query, lessons_k=settings.lessons_k,
                        confirmations_k=settings.confirmations_k,
                        profile_k=settings.memories_k)
    hits = memory.recall(user_id, query, scope=scope, types=_FACT_TYPES,
                         k=settings.memories_k)
    seen: set[str] = set()
    memories: list[MemoryLine] = []
    for rec, score in [(r, 1.0) for r in b.profile] + [(h.record, h.score) for h in hits]:
        if rec.id not in seen and len(memories) < settings.memories_k:
            seen.add(rec.id)
            memories.append(MemoryLine(rec.id, dated(rec), round(score, 3)))
    return MemoryContext([c.question for c in b.confirmations], memories,
                         [MemoryLine(r.id, r.content) for r in b.lessons],
                         rules=[r.content for r in b.rules])
