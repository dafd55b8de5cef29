"""The shape every consolidation job has, and what a run hands to it.

A job is planned and applied **per user**; the runner groups users into
batches (one write transaction and one checkpoint per batch) and owns
everything else - the lease, the run row, resuming after a crash, dry runs,
progress. A job only answers four questions:

* which users are there to look at (:meth:`Job.users`, in id order, after a cursor);
* what would you do for this user (:meth:`Job.plan`, no writes);
* do it (:meth:`Job.apply`, inside the batch transaction, through memory's
  :class:`~memstrata.memory.RecordTxn` - a job never writes memory's tables itself;
  returns what was done);
* plan inside the batch transaction or before it (:attr:`Job.plan_in_txn`):
  cheap SQL-only jobs (``expire``) plan inside, jobs that embed or call a model
  plan before and :meth:`~Job.apply` re-checks each action's ``before`` values,
  so a record changed in between is skipped, never clobbered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import Connection

from memstrata.config import Settings
from memstrata.consolidation._llm import LLMGate
from memstrata.consolidation.reports import Method, PlannedAction
from memstrata.consolidation.settings import ConsolidationSettings
from memstrata.memory import Database, Embedder, RecordTxn

__all__ = ["Applied", "Job", "JobContext", "UserPlan", "combine_methods"]


def combine_methods(a: Method, b: Method) -> Method:
    if a == "none":
        return b
    if b == "none" or a == b:
        return a
    return "llm+offline"


@dataclass
class JobContext:
    """Everything a job may use during one run (one per run, one thread)."""

    db: Database
    settings: ConsolidationSettings
    memory_settings: Settings
    #: the run's "now" (epoch seconds), refreshed at every batch
    now: float
    dry_run: bool
    run_id: str | None
    embedder_factory: Callable[[], Embedder]
    llm: LLMGate | None = None
    #: job-specific options (undo: the target run)
    options: dict[str, Any] = field(default_factory=dict)
    batch: int = 0
    _embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self.embedder_factory()
        return self._embedder

    def model(self) -> LLMGate | None:
        """The budgeted LLM, unless this is a dry run or none is configured."""
        return None if self.dry_run else self.llm


@dataclass
class UserPlan:
    user_id: str
    actions: list[PlannedAction] = field(default_factory=list)
    #: job-specific material for apply (new records with their vectors, ...)
    payload: Any = None
    method: Method = "none"
    errors: list[str] = field(default_factory=list)


@dataclass
class Applied:
    actions: list[PlannedAction] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Job(Protocol):
    #: the job name, also the name of its lease
    name: str
    lease: str
    plan_in_txn: bool

    def users(self, conn: Connection, ctx: JobContext, after: str | None,
              limit: int | None) -> list[str]:
        """Users to look at, ordered by id, strictly after ``after``."""
        ...

    def plan(self, conn: Connection, ctx: JobContext, user_id: str) -> UserPlan: ...

    def apply(self, txn: RecordTxn, ctx: JobContext, plan: UserPlan) -> Applied:
        """Carry out ``plan`` inside the batch transaction through memory's lifecycle
        changes (``txn``; it locks the user itself, and skips an erased one);
        ``txn.conn`` is the transaction for the job's own tables."""
        ...
