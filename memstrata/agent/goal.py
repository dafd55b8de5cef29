"""The goal profile and the task table.

* :class:`Goal` (a pydantic model: it is a public input) - intent, acceptance
  criteria, constraints, priority, and the one-sentence ``restatement`` the
  model must echo at the start of every reply, which keeps it tied to the goal
  on long tasks and lets the kernel measure drift.
* :class:`TaskState` - the planner's table: subtasks with their state
  (``pending -> running -> done / failed / abandoned``), the criterion each
  serves, attempts and the last result summary, plus the run's counters.
  It is stored as the task's JSON ``state`` in the episodic store after every
  step, together with ``applied_step`` - the last recorded step it includes -
  so a resumed run replays only the steps recorded after it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from .errors import UsageError

__all__ = [
    "Criterion",
    "Goal",
    "Phase",
    "Subtask",
    "SubtaskSpec",
    "SubtaskStatus",
    "TaskState",
]

SubtaskStatus = Literal["pending", "running", "done", "failed", "abandoned"]
Phase = Literal["planning", "acting", "awaiting_user", "done", "failed"]
_SUBTASK_MOVES: Mapping[str, frozenset[str]] = {
    "pending": frozenset({"running", "done", "failed", "abandoned"}),
    "running": frozenset({"done", "failed", "abandoned", "pending"}),
    "failed": frozenset({"running", "done", "abandoned"}),
    "done": frozenset(),
    "abandoned": frozenset(),
}
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s")
#: characters of a subtask's last result the task table shows (the result itself is the
#: verbatim round's, or a finished round's line)
LAST_RESULT_SHOWN = 80


class Goal(BaseModel):
    """What the user wants, and how we will know it is done."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    intent: str = Field(min_length=1, max_length=4000)
    #: acceptance criteria; default: one criterion, "the request is handled"
    acceptance: list[str] = Field(default_factory=list, max_length=20)
    constraints: list[str] = Field(default_factory=list, max_length=20)
    priority: Literal["low", "normal", "high", "urgent"] = "normal"
    #: the one sentence the model echoes each turn (default: derived from the intent)
    restatement: str | None = Field(default=None, max_length=400)
    #: a registered plan template to use instead of an LLM plan
    template: str | None = None

    @field_validator("intent")
    @classmethod
    def _intent_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the intent is empty")
        return value.strip()

    @field_validator("acceptance", "constraints")
    @classmethod
    def _no_blank(cls, value: list[str]) -> list[str]:
        if any(not v.strip() for v in value):
            raise ValueError("criteria and constraints cannot be blank")
        return [v.strip() for v in value]

    @property
    def sentence(self) -> str:
        """The restatement, or the intent's first sentence (bounded)."""
        if self.restatement:
            return self.restatement.strip()
        first = _SENTENCE.split(self.intent.strip(), maxsplit=1)[0]
        return first if len(first) <= 200 else first[:197] + "..."

    def criteria(self) -> list[Criterion]:
        texts = self.acceptance or [f"The user's request is handled: {self.sentence}"]
        return [Criterion(f"c{i}", t) for i, t in enumerate(texts, 1)]


@dataclass(frozen=True, slots=True)
class Criterion:
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class SubtaskSpec:
    """A subtask as a planner proposes it."""

    title: str
    criterion: str
    #: the tool expected to do it (its success completes the subtask)
    tool: str | None = None
    #: expected arguments (used to attribute a call to this subtask)
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Subtask:
    id: str
    title: str
    criterion: str
    status: SubtaskStatus = "pending"
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0
    last_result: str | None = None
    plan_version: int = 1
    #: step numbers of the actions taken for it (evidence)
    steps: list[int] = field(default_factory=list)

    def move(self, status: SubtaskStatus) -> None:
        if status == self.status:
            return
        if status not in _SUBTASK_MOVES[self.status]:
            raise UsageError(f"subtask {self.id} cannot go from {self.status} to {status}")
        self.status = status

    @property
    def open(self) -> bool:
        return self.status in ("pending", "running", "failed")


@dataclass(slots=True)
class TaskState:
    """The persisted task table plus counters; see the module docstring."""

    subtasks: list[Subtask] = field(default_factory=list)
    phase: Phase = "planning"
    plan_version: int = 0
    plan_source: str | None = None
    replans: int = 0
    turn: int = 0
    applied_step: int = 0
    consecutive_failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    effective_calls: int = 0
    corrections: int = 0
    failures_by_tool: dict[str, int] = field(default_factory=dict)
    reflected: list[str] = field(default_factory=list)
    drift_strikes: int = 0
    output: str | None = None
    stop_reason: str | None = None
    lesson_id: str | None = None
    template_params: dict[str, Any] | None = None
    kind: Literal["task_state"] = "task_state"

    # ------------------------------------------------------------ table

    def add_plan(self, specs: Iterable[SubtaskSpec], *, source: str) -> list[Subtask]:
        """Install a plan: open subtasks of the previous plan are abandoned, done ones kept."""
        self.plan_version += 1
        self.plan_source = source
        for sub in self.subtasks:
            if sub.open:
                sub.move("abandoned")
        start = len(self.subtasks) + 1
        added = [
            Subtask(id=f"s{start + i}", title=s.title, criterion=s.criterion, tool=s.tool,
                    args=dict(s.args), plan_version=self.plan_version)
            for i, s in enumerate(specs)
        ]
        self.subtasks.extend(added)
        self.consecutive_failures = 0
        self.drift_strikes = 0
        return added

    def get(self, subtask_id: str | None) -> Subtask | None:
        return next((s for s in self.subtasks if s.id == subtask_id), None)

    def current(self) -> Subtask | None:
        """The first open subtask of the current plan."""
        return next((s for s in self.subtasks if s.open), None)

    def attribute(self, tool: str, args: Mapping[str, Any]) -> Subtask | None:
        """The subtask a call serves: an open one bound to this tool whose expected
        arguments match, preferring the current one; else the current subtask."""
        current = self.current()
        matches = [
            s for s in self.subtasks
            if s.open and s.tool == tool
            and all(str(args.get(k)) == str(v) for k, v in s.args.items() if v is not None)
        ]
        if current is not None and current in matches:
            return current
        return matches[0] if matches else current

    def criterion_met(self, criterion_id: str) -> bool:
        live = [s for s in self.subtasks if s.criterion == criterion_id and
                s.status != "abandoned"]
        return bool(live) and all(s.status == "done" for s in live)

    def unmet(self, criteria: Iterable[Criterion]) -> list[Criterion]:
        return [c for c in criteria if not self.criterion_met(c.id)]

    def render(self) -> str:
        lines = []
        for s in self.subtasks:
            if s.status == "abandoned" and s.plan_version < self.plan_version:
                continue
            tool = f" via {s.tool}" if s.tool else ""
            last = f" - last: {s.last_result[:LAST_RESULT_SHOWN]}" if s.last_result else ""
            lines.append(f"{s.id} [{s.status}] {s.title}{tool} (serves {s.criterion}; "
                         f"attempts {s.attempts}){last}")
        return "\n".join(lines) if lines else "(no plan yet)"


STATE = TypeAdapter(TaskState)
