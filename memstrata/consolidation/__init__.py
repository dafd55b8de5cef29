"""Memory formation and consolidation: cheap writes now, careful thinking later.

* :func:`observe` (``MemoryManager.observe``) - append a conversation turn and
  form memories from it with a fast offline extractor and the write policy;
* :class:`Consolidator` - the jobs ``summarize``, ``conflicts`` and ``expire``:
  leased, batched, checkpointed, resumable, every action recorded, dry-runnable
  and undoable; an LLM under a token budget when configured, deterministic
  offline methods otherwise;
* :class:`ConsolidationScheduler` - the jobs on APScheduler cron triggers, job
  store in the memory database;
* :func:`build_briefing` (``MemoryManager.briefing``) - what the planner gets:
  questions to ask, lessons for the goal, profile facts to pin.

Names are imported on first use, so the core can import this package's table
definitions (``_tables``) without pulling in the jobs, the scheduler or the
LLM client. See ``docs/consolidation.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstrata.consolidation._lease import LeaseLostError
    from memstrata.consolidation.briefing import Briefing, Confirmation, build_briefing
    from memstrata.consolidation.extract import Extracted, extract
    from memstrata.consolidation.formation import Observation, observe
    from memstrata.consolidation.reports import ActionRecord, PlannedAction, RunReport
    from memstrata.consolidation.runner import Consolidator, RunHooks, RunNotFoundError
    from memstrata.consolidation.scheduler import ConsolidationScheduler
    from memstrata.consolidation.settings import (
        JOB_NAMES,
        ConsolidationSettings,
        LLMSettings,
        ScheduleSettings,
    )

_WHERE = {
    "LeaseLostError": "_lease",
    "Briefing": "briefing", "Confirmation": "briefing", "build_briefing": "briefing",
    "Extracted": "extract", "extract": "extract",
    "Observation": "formation", "observe": "formation",
    "ActionRecord": "reports", "PlannedAction": "reports", "RunReport": "reports",
    "Consolidator": "runner", "RunHooks": "runner", "RunNotFoundError": "runner",
    "ConsolidationScheduler": "scheduler",
    "JOB_NAMES": "settings", "ConsolidationSettings": "settings", "LLMSettings": "settings",
    "ScheduleSettings": "settings",
}

__all__ = [
    "JOB_NAMES",
    "ActionRecord",
    "Briefing",
    "Confirmation",
    "ConsolidationScheduler",
    "ConsolidationSettings",
    "Consolidator",
    "Extracted",
    "LLMSettings",
    "LeaseLostError",
    "Observation",
    "PlannedAction",
    "RunHooks",
    "RunNotFoundError",
    "RunReport",
    "ScheduleSettings",
    "build_briefing",
    "extract",
    "observe",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'memstrata.consolidation' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memstrata.consolidation.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
