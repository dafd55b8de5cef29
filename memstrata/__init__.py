"""memstrata - layered memory for LLM agents and personal assistants.

Working memory per session, long-term memory (structured + vector, with types,
TTLs and decay), episodic trajectories, and consolidation jobs, on SQLite and a
local index by default.
"""

from memstrata.clock import Clock, ManualClock, SystemClock
from memstrata.config import Settings
from memstrata.memory import Briefing, Confirmation, MemoryManager, Observation, Step
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

__all__ = [
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
