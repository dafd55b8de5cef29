"""Pure decision rules: what to write, how to rank, when to forget, what conflicts.

Policies never touch storage; the :class:`~memstrata.MemoryManager` gathers
what they need from the stores and carries out what they decide.
"""

from memstrata.policies.conflict import ConflictMode, ConflictPolicy, texts_contradict
from memstrata.policies.retention import RetentionPolicy
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.write import (
    Candidate,
    Neighbour,
    Verdict,
    WritePolicy,
    decide,
    memorability,
)

__all__ = [
    "Candidate",
    "ConflictMode",
    "ConflictPolicy",
    "Neighbour",
    "RetentionPolicy",
    "RetrievalPolicy",
    "Verdict",
    "WritePolicy",
    "decide",
    "memorability",
    "texts_contradict",
]
