"""The layered stores and the :class:`MemoryManager` facade."""

from memstrata.memory.embedder import Embedder
from memstrata.memory.episodic import EpisodicMemory, Step, TaskRecord, Trajectory, TurnRecord
from memstrata.memory.longterm import LongTermMemory, PartialWriteError
from memstrata.memory.manager import ManagerState, MemoryManager, default_embedder
from memstrata.memory.vector import Hit, SearchFilter, VectorIndex, Watermark
from memstrata.memory.working import WorkingMemory

__all__ = [
    "Embedder",
    "EpisodicMemory",
    "Hit",
    "LongTermMemory",
    "ManagerState",
    "MemoryManager",
    "PartialWriteError",
    "SearchFilter",
    "Step",
    "TaskRecord",
    "Trajectory",
    "TurnRecord",
    "VectorIndex",
    "Watermark",
    "WorkingMemory",
    "default_embedder",
]
