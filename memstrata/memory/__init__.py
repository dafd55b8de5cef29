"""The layered stores and the :class:`MemoryManager` facade."""

from memstrata.memory import queries
from memstrata.memory._db import Database
from memstrata.memory._lifecycle import (
    RECORD_COLUMNS,
    ChangeLike,
    RecordTxn,
    activated,
    changed_columns,
    deleted,
    demoted,
    in_conflict,
    superseded,
)
from memstrata.memory._validate import MAX_QUERY_CHARS, check_scope, check_user
from memstrata.memory._writer import WriteTxn
from memstrata.memory.aio import AsyncMemoryManager
from memstrata.memory.briefing import Briefing, Confirmation
from memstrata.memory.embedder import Embedder
from memstrata.memory.episodic import EpisodicMemory, Step, TaskRecord, Trajectory, TurnRecord
from memstrata.memory.formation import Observation
from memstrata.memory.longterm import LongTermMemory, PartialWriteError
from memstrata.memory.manager import ManagerState, MemoryManager, default_embedder
from memstrata.memory.rerank import Reranker
from memstrata.memory.vector import Hit, SearchFilter, VectorIndex, Watermark
from memstrata.memory.working import WorkingMemory

__all__ = [
    "MAX_QUERY_CHARS",
    "RECORD_COLUMNS",
    "AsyncMemoryManager",
    "Briefing",
    "ChangeLike",
    "Confirmation",
    "Database",
    "Embedder",
    "EpisodicMemory",
    "Hit",
    "LongTermMemory",
    "ManagerState",
    "MemoryManager",
    "Observation",
    "PartialWriteError",
    "RecordTxn",
    "Reranker",
    "SearchFilter",
    "Step",
    "TaskRecord",
    "Trajectory",
    "TurnRecord",
    "VectorIndex",
    "Watermark",
    "WorkingMemory",
    "WriteTxn",
    "activated",
    "changed_columns",
    "check_scope",
    "check_user",
    "default_embedder",
    "deleted",
    "demoted",
    "in_conflict",
    "queries",
    "superseded",
]
