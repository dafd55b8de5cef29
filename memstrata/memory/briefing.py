"""What the planner gets from memory before it plans: :meth:`MemoryManager.briefing`.

::

    b = memory.briefing("alice", "travel", goal="book a flight to Tokyo")
    b.confirmations   # questions to ask: open conflicts, newest first
    b.lessons         # session summaries and task lessons relevant to the goal
    b.profile         # profile facts and pinned records to keep in the prompt
    b.rules           # the user's standing rules ("always answer in English"), all of them
    b.lines()         # the same, rendered as short prompt lines

One frozen value, built from three reads: the open conflict groups of the
scope, a recall over ``summary`` and ``experience`` records with the goal as
the query (without a goal: the freshest ones), and the active profile facts
and pinned records of the scope plus the ``default`` scope (facts about the
person - name, city, allergies - usually live there). The user's standing rules
(``rule`` records: a reply language, "always use bullet points", a constraint) of
the scope and the ``default`` scope are always all there (up to :data:`MAX_RULES`),
newest first: they have no expiry and hold until the user revokes or replaces them.

The agent's context builder consumes this; it is documented in
``docs/consolidation.md``. Returning lessons counts as a use (their expiry is
extended), like any recall; pass ``record_use=False`` for a read-only look.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from memstrata.config import DEFAULT_SCOPE
from memstrata.errors import InvalidInputError
from memstrata.memory._validate import check_flag, check_number, check_query, check_scope
from memstrata.policies.temporal import DateRange
from memstrata.types import MemoryRecord, MemoryType, Status

if TYPE_CHECKING:
    from memstrata.memory.manager import MemoryManager

__all__ = ["Briefing", "Confirmation", "build_briefing", "dated"]

DEFAULT_LESSONS_K = 3
DEFAULT_PROFILE_K = 10
DEFAULT_CONFIRMATIONS_K = 5
DEFAULT_FRESH_DAYS = 14.0
#: standing rules a briefing carries at most (newest first)
MAX_RULES = 50


@dataclass(frozen=True, slots=True)
class Confirmation:
    """An open conflict, phrased as the question to ask the user.

    Settle it with ``memory.resolve_conflict(user, keep=<record id>)``.
    """

    conflict_group: str
    question: str
    #: the conflicting records, oldest first
    records: tuple[MemoryRecord, ...]
    scope: str
    kind: Literal["confirmation"] = "confirmation"


@dataclass(frozen=True, slots=True)
class Briefing:
    """Everything memory wants the planner to know before it plans."""

    user_id: str
    scope: str | None
    goal: str | None
    confirmations: tuple[Confirmation, ...]
    lessons: tuple[MemoryRecord, ...]
    profile: tuple[MemoryRecord, ...]
    generated_at: datetime
    #: the user's standing rules, newest first (every one of the scope and ``default``)
    rules: tuple[MemoryRecord, ...] = ()
    kind: Literal["briefing"] = "briefing"

    @property
    def empty(self) -> bool:
        return not (self.confirmations or self.lessons or self.profile or self.rules)

    def lines(self) -> list[str]:
        """Short prompt lines: ``rule: ...``, ``ask: ...``, ``lesson: ...``,
        ``profile: ...``."""
        out = [f"rule: {r.content}" for r in self.rules]
        out += [f"ask: {c.question}" for c in self.confirmations]
        out += [f"lesson: {r.content}" for r in self.lessons]
        out += [f"profile: {dated(r)}" for r in self.profile]
        return out


def dated(record: MemoryRecord) -> str:
    """A memory's text for the planner, with the date it is about when one was
    resolved at write time ("Yesterday I went to the dentist." said on 8 May ->
    "... (on 2023-05-07)"): the planner reads "yesterday" long after it was said.
    """
    raw = record.metadata.get("event_date") if isinstance(record.metadata, dict) else None
    when = DateRange.from_json(raw)
    if when is None:
        return record.content
    label = when.label().replace("..", " to ")
    return f"{record.content} ({'on' if when.start == when.end else 'from'} {label})"


def _question(records: list[MemoryRecord]) -> str:
    from memstrata.policies.contradiction import is_cjk  # its rules load on first use

    slots = [r.slot for r in records if r.slot is not None]
    if len(slots) == len(records) and len({s.key for s in slots}) == 1:
        values = " or ".join(repr(s.value) for s in slots)
        if any(is_cjk(s.value) or is_cjk(s.attribute) for s in slots):
            return f"您的{slots[0].attribute}是哪一个：{' 还是 '.join(s.value for s in slots)}？"
        return f"Which is right for your {slots[0].attribute}: {values}?"
    if any(is_cjk(r.content) for r in records):
        said = "，后来又说".join(f"“{r.content}”" for r in records)
        return f"您之前说过{said}。现在哪个是对的？"
    said = " and later ".join(f'"{r.content}" ({r.valid_from:%Y-%m-%d})' for r in records)
    return f"You said {said}. Which one holds now?"


def build_briefing(
    manager: MemoryManager,
    user_id: str,
    scope: str | None = None,
    goal: str | None = None,
    *,
    lessons_k: int = DEFAULT_LESSONS_K,
    profile_k: int = DEFAULT_PROFILE_K,
    confirmations_k: int = DEFAULT_CONFIRMATIONS_K,
    fresh_days: float = DEFAULT_FRESH_DAYS,
    record_use: bool = True,
) -> Briefing:
    """Build a :class:`Briefing`; see the module docstring."""
    for name, k in (("lessons_k", lessons_k), ("profile_k", profile_k),
                    ("confirmations_k", confirmations_k)):
        if not isinstance(k, int) or not 0 <= k <= 100:
            raise InvalidInputError(f"{name} must be an integer in 0..100")
    if goal is not None:  # a recall query: checked and capped like one, lessons or not
        check_query(goal, "the goal")
    check_number(fresh_days, "fresh_days", 0.0, 100 * 365.0)  # `now - fresh_days` stays a date
    check_flag(record_use, "record_use")
    if scope is not None:  # one scope (memories() and recall() would take a list)
        check_scope(scope, manager.settings.scopes)
    now = manager.clock.now()
    groups = manager.conflicts(user_id, scope=scope)
    groups.sort(key=lambda g: max(r.valid_from for r in g), reverse=True)
    confirmations = tuple(
        Confirmation(
            conflict_group=g[0].conflict_group or g[0].id,
            question=_question(g),
            records=tuple(g),
            scope=g[0].scope,
        )
        for g in groups[:confirmations_k]
    )
    kinds = [MemoryType.SUMMARY, MemoryType.EXPERIENCE]
    lessons: list[MemoryRecord] = []
    if lessons_k:
        if goal is not None:
            hits = manager.recall(user_id, goal, scope=scope, types=kinds, k=lessons_k,
                                  record_use=record_use)
            lessons = [h.record for h in hits]
        else:
            fresh = now - timedelta(days=fresh_days)
            lessons = [r for r in manager.memories(user_id, scope=scope, types=kinds,
                                                   statuses=[Status.ACTIVE], limit=lessons_k)
                       if r.created_at >= fresh]
    # profile facts and rules of the scope and of default (facts about the person)
    scopes = None if scope is None else sorted({scope, DEFAULT_SCOPE})
    profile: list[MemoryRecord] = []
    if profile_k:
        found = {r.id: r for r in manager.memories(
            user_id, scope=scopes, types=[MemoryType.PROFILE], statuses=[Status.ACTIVE],
            limit=max(profile_k * 3, 30))}
        for r in manager.memories(user_id, scope=scopes, statuses=[Status.ACTIVE], pinned=True,
                                  limit=max(profile_k * 3, 30)):
            found.setdefault(r.id, r)
        profile = sorted(found.values(),
                         key=lambda r: (not r.pinned, -(r.confidence * r.importance), r.id))
        profile = profile[:profile_k]
    rules = sorted(manager.memories(user_id, scope=scopes, types=[MemoryType.RULE],
                                    statuses=[Status.ACTIVE], limit=MAX_RULES),
                   key=lambda r: (r.valid_from, r.id), reverse=True)
    return Briefing(
        user_id=user_id, scope=scope, goal=goal, confirmations=confirmations,
        lessons=tuple(lessons), profile=tuple(profile), generated_at=now, rules=tuple(rules),
    )
