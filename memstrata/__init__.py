"""memstrata - layered memory for LLM agents and personal assistants.

Working memory per session, long-term memory (structured + vector, with types,
TTLs and decay), episodic trajectories, and consolidation jobs, on SQLite and a
local index by default.

Names are imported on first use: ``memstrata --help`` and a command refusing a
bad argument do not pay for SQLAlchemy, numpy or the model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstrata.clock import Clock, ManualClock, SystemClock
    from memstrata.config import Settings
    from memstrata.memory import (
        AsyncMemoryManager,
        Briefing,
        Confirmation,
        MemoryManager,
        Observation,
        Step,
    )
    from memstrata.policies import ConflictPolicy, RetentionPolicy, RetrievalPolicy, WritePolicy
    from memstrata.types import (
        MemoryInput,
        MemoryRecord,
        MemoryType,
        RecallHit,
        Slot,
        Source,
        Status,
        WriteDecision,
    )

__version__ = "0.1.0"

_WHERE = {
    "Clock": "clock", "ManualClock": "clock", "SystemClock": "clock",
    "Settings": "config",
    "AsyncMemoryManager": "memory", "Briefing": "memory", "Confirmation": "memory",
    "MemoryManager": "memory", "Observation": "memory", "Step": "memory",
    "ConflictPolicy": "policies", "RetentionPolicy": "policies",
    "RetrievalPolicy": "policies", "WritePolicy": "policies",
    "MemoryInput": "types", "MemoryRecord": "types", "MemoryType": "types",
    "RecallHit": "types", "Slot": "types", "Source": "types", "Status": "types",
    "WriteDecision": "types",
}

__all__ = [
    "AsyncMemoryManager",
    "Briefing",
    "Clock",
    "Confirmation",
    "ConflictPolicy",
    "ManualClock",
    "MemoryInput",
    "MemoryManager",
    "MemoryRecord",
    "MemoryType",
    "Observation",
    "RecallHit",
    "RetentionPolicy",
    "RetrievalPolicy",
    "Settings",
    "Slot",
    "Source",
    "Status",
    "Step",
    "SystemClock",
    "WriteDecision",
    "WritePolicy",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'memstrata' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memstrata.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
