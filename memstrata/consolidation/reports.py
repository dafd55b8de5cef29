"""What the consolidation jobs hand back: run reports and recorded actions.

Plain frozen dataclasses tagged with ``kind``; times are aware UTC datetimes.
A :class:`RunReport` is what ``memstrata runs`` lists; the
:class:`ActionRecord` rows of a run are what ``undo`` replays backwards and
what a dry run shows as :class:`PlannedAction` without writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = ["ActionRecord", "Method", "PlannedAction", "RunReport", "RunStatus"]

RunStatus = Literal["running", "finished", "failed", "interrupted", "abandoned", "skipped",
                    "dry_run"]
#: which method did the thinking: an LLM, the deterministic offline rules, or both
#: (the LLM until its token budget ran out, or for some items only)
Method = Literal["offline", "llm", "llm+offline", "none"]


@dataclass(frozen=True, slots=True)
class PlannedAction:
    """One change a job intends to make (a dry run shows these; a run records them).

    ``before`` / ``after`` hold only the columns the action changes; ``before``
    is ``None`` when the action creates the record and ``after`` is ``None``
    when it removes the row for good (a purge - not undoable).
    """

    user_id: str
    memory_id: str | None
    action: str
    reason: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    kind: Literal["planned_action"] = "planned_action"

    def describe(self) -> str:
        changes = ""
        if self.before is not None and self.after is not None:
            keys = [k for k in self.after if k not in ("updated_at", "metadata")]
            changes = ", ".join(f"{k}: {self.before.get(k)!r} -> {self.after.get(k)!r}"
                                for k in keys[:4])
        elif self.after is not None and "content" in self.after:
            changes = f"new: {str(self.after['content'])[:80]!r}"
        return f"{self.action:<14} {self.user_id}/{self.memory_id or '-'}  {changes}  " \
               f"({self.reason})"


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """A recorded action of a run (a row of ``consolidation_actions``)."""

    id: int
    run_id: str
    user_id: str
    memory_id: str | None
    action: str
    reason: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: datetime
    batch: int
    kind: Literal["action_record"] = "action_record"


@dataclass(frozen=True, slots=True)
class RunReport:
    """What one job run did (or, for a dry run, would do).

    ``counts`` maps an action (``demote``, ``delete``, ``merge``,
    ``flag_conflict``, ``summarize_session``, ...) to how many records it
    touched. ``method`` says whether an LLM or the offline rules did the
    judging; ``llm_calls`` / ``prompt_tokens`` / ``completion_tokens`` are what
    the run spent of ``token_budget``. A run that crashed and was resumed keeps
    its id; ``resumed`` counts the resumptions.
    """

    run_id: str | None
    job: str
    status: RunStatus
    dry_run: bool
    started_at: datetime
    finished_at: datetime | None
    counts: dict[str, int]
    errors: tuple[str, ...]
    method: Method
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    token_budget: int | None = None
    users: int = 0
    batches: int = 0
    resumed: int = 0
    only_user: str | None = None
    slot: datetime | None = None
    undone_by: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: dry run: the actions it would take (capped; ``counts`` has the totals)
    planned: tuple[PlannedAction, ...] = ()
    kind: Literal["run_report"] = "run_report"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def total_actions(self) -> int:
        return sum(self.counts.values())

    def summary_line(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())) or "nothing to do"
        llm = f", llm calls {self.llm_calls}, tokens {self.tokens}" if self.llm_calls else ""
        rid = self.run_id or "(dry run)"
        return (f"{rid} {self.job:<9} {self.status:<11} method={self.method} users={self.users} "
                f"batches={self.batches}{llm}: {counts}"
                + (f"; {len(self.errors)} errors" if self.errors else ""))
