"""Memory formation and consolidation: cheap writes now, careful thinking later.

* formation at write time (``MemoryManager.observe``) lives in
  :mod:`memstrata.memory.formation` (rules in :mod:`memstrata.policies.extraction`);
  the briefing for the planner (``MemoryManager.briefing``) in
  :mod:`memstrata.memory.briefing` - both read and write only through memory;
* :class:`Consolidator` - the jobs ``summarize``, ``conflicts`` and ``expire``:
  leased, batched, checkpointed, resumable, every action recorded, dry-runnable
  and undoable; an LLM under a token budget when configured, deterministic
  offline methods otherwise;
* :class:`ConsolidationScheduler` - the jobs on APScheduler cron triggers, job
  store in the memory database;
* :class:`Worker` - works partitioned runs (``memstrata worker``): any number of
  processes on any hosts share one run through the database;

Names are imported on first use, so importing this package's table definitions
(``_tables``) or its eraser does not pull in the jobs, the scheduler or the LLM
client. See ``docs/consolidation.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memstrata._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from memstrata.consolidation._lease import LeaseLostError
    from memstrata.consolidation.reports import ActionRecord, PlannedAction, RunReport
    from memstrata.consolidation.runner import (
        Consolidator,
        PartitionState,
        RunHooks,
        RunNotFoundError,
    )
    from memstrata.consolidation.scheduler import ConsolidationScheduler
    from memstrata.consolidation.settings import (
        JOB_NAMES,
        ConsolidationSettings,
        LLMSettings,
        ScheduleSettings,
    )
    from memstrata.consolidation.worker import Worker, WorkerReport

_WHERE = {
    "LeaseLostError": "_lease",
    "ActionRecord": "reports", "PlannedAction": "reports", "RunReport": "reports",
    "Consolidator": "runner", "RunHooks": "runner", "RunNotFoundError": "runner",
    "PartitionState": "runner", "Worker": "worker", "WorkerReport": "worker",
    "ConsolidationScheduler": "scheduler",
    "JOB_NAMES": "settings", "ConsolidationSettings": "settings", "LLMSettings": "settings",
    "ScheduleSettings": "settings",
}

__all__ = [
    "JOB_NAMES",
    "ActionRecord",
    "ConsolidationScheduler",
    "ConsolidationSettings",
    "Consolidator",
    "LLMSettings",
    "LeaseLostError",
    "PartitionState",
    "PlannedAction",
    "RunHooks",
    "RunNotFoundError",
    "RunReport",
    "ScheduleSettings",
    "Worker",
    "WorkerReport",
]


__getattr__ = _lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
