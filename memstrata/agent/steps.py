"""What a run records, one kind-tagged dataclass per kind of step.

The run's log is the only history: prompts are rebuilt from it every turn
(there is no second copy of the conversation), it is written to the episodic
store as it happens, and a resumed run reads it back from there. Each item
owns :meth:`to_messages`, its chat-completions rendering.

An item is stored as an episodic :class:`~memstrata.memory.episodic.Step`
whose columns hold the audit view (thought, action, arguments, observation,
outcome, error type, latency, tokens) and whose ``extra["item"]`` holds the
item itself, serialised through a ``TypeAdapter``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from memstrata.memory.episodic import Step

__all__ = [
    "REFUSALS",
    "Action",
    "ActionStarted",
    "Final",
    "LogEntry",
    "LogItem",
    "ModelTurn",
    "PlanMade",
    "Reflection",
    "RetryRequest",
    "UserMessage",
    "from_step",
    "to_step",
]


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    #: the user corrected the agent (counted in the task metrics)
    correction: bool = False
    kind: Literal["user"] = "user"

    def to_messages(self) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.text}]

    def line(self) -> str:
        return f"user said: {self.text}"


@dataclass(frozen=True, slots=True)
class ModelTurn:
    turn: int
    content: str | None
    #: the goal sentence the model echoed (None: it did not)
    echo: str | None
    thought: str | None
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    context_tokens: int = 0
    #: embedding similarity of the echo (or thought) to the goal sentence
    goal_similarity: float | None = None
    kind: Literal["model"] = "model"

    def to_messages(self) -> list[dict[str, Any]]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in self.tool_calls
            ]
        return [message]

    def line(self) -> str:
        if self.tool_calls:
            return f"turn {self.turn}: called " + ", ".join(c["name"] for c in self.tool_calls)
        return f"turn {self.turn}: replied: {(self.thought or self.content or '')[:160]}"


@dataclass(frozen=True, slots=True)
class ActionStarted:
    """Written before a side-effecting call runs: if the process dies during the
    call, a resumed run knows the outcome is unknown instead of guessing."""

    turn: int
    call_id: str
    tool: str
    args: dict[str, Any]
    subtask_id: str | None
    kind: Literal["action_started"] = "action_started"

    def to_messages(self) -> list[dict[str, Any]]:
        return []

    def line(self) -> str:
        return f"turn {self.turn}: started {self.tool}"


@dataclass(frozen=True, slots=True)
class Action:
    turn: int
    call_id: str
    tool: str
    #: validated arguments, or the raw ones when validation failed
    args: dict[str, Any]
    success: bool
    #: what the model saw (bounded)
    observation: str
    data: Any = None
    error: str | None = None
    error_type: str | None = None
    retriable: bool = False
    subtask_id: str | None = None
    latency_ms: float = 0.0
    attempts: int = 0
    cached: bool = False
    notes: list[str] = field(default_factory=list)
    #: the subtask this action finished ("done") or failed ("failed"), if any
    subtask_status: str | None = None
    kind: Literal["action"] = "action"

    def to_messages(self) -> list[dict[str, Any]]:
        return [{"role": "tool", "tool_call_id": self.call_id, "content": self.observation}]

    def line(self) -> str:
        """The call as code (``search(q="late", limit=5)``, arguments as JSON values)
        and the start of what it returned: a finished round's line in the context."""
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}"
                         for k, v in self.args.items())
        return f"turn {self.turn}: {self.tool}({args[:60]}) → {self.observation[:40]}"


@dataclass(frozen=True, slots=True)
class RetryRequest:
    """The kernel asks the model to fix its reply (missing goal echo, bad plan)."""

    turn: int
    reason: str
    kind: Literal["retry"] = "retry"

    def to_messages(self) -> list[dict[str, Any]]:
        return [{"role": "user", "content": f"[kernel] {self.reason}"}]

    def line(self) -> str:
        return f"turn {self.turn}: retry requested: {self.reason[:120]}"


@dataclass(frozen=True, slots=True)
class PlanMade:
    version: int
    source: str
    reason: str
    subtasks: list[dict[str, Any]]
    #: tokens the planning calls used
    prompt_tokens: int = 0
    completion_tokens: int = 0
    kind: Literal["plan"] = "plan"

    def to_messages(self) -> list[dict[str, Any]]:
        return []

    def line(self) -> str:
        return f"plan v{self.version} ({self.source}): {len(self.subtasks)} subtasks - " \
               f"{self.reason[:100]}"


@dataclass(frozen=True, slots=True)
class Reflection:
    """A structured post-mortem of a failure, stored with the trajectory."""

    trigger: str
    root_cause: str
    evidence: list[int]
    suggested_fix: str
    tool: str | None = None
    #: de-duplicates reports of one trigger (e.g. "repeated:query_order:v1")
    key: str = ""
    kind: Literal["reflection"] = "reflection"

    def to_messages(self) -> list[dict[str, Any]]:
        return []

    def line(self) -> str:
        return f"reflection ({self.trigger}): {self.root_cause} → {self.suggested_fix}"


@dataclass(frozen=True, slots=True)
class Final:
    status: str
    output: str | None
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    kind: Literal["final"] = "final"

    def to_messages(self) -> list[dict[str, Any]]:
        return []

    def line(self) -> str:
        return f"finished {self.status}: {self.reason}"


#: error types of a call a gate did not let run (the step's outcome is "refused")
REFUSALS = frozenset({"denied", "refused", "confirmation_required"})

LogItem = Annotated[
    UserMessage | ModelTurn | ActionStarted | Action | RetryRequest | PlanMade | Reflection
    | Final,
    Field(discriminator="kind"),
]
ITEM: TypeAdapter[LogItem] = TypeAdapter(LogItem)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A log item with the episodic step number it was recorded under."""

    step_no: int
    item: LogItem


def to_step(item: LogItem) -> Step:
    """The episodic record of an item: audit columns plus the item itself."""
    extra = {"item": ITEM.dump_python(item, mode="json")}
    if isinstance(item, ModelTurn):
        calls = [c["name"] for c in item.tool_calls]
        return Step(thought=item.thought, action="model:" + ("+".join(calls) or "reply"),
                    args={"echo": item.echo}, observation=item.content, outcome="model",
                    latency_ms=item.latency_ms,
                    tokens=item.prompt_tokens + item.completion_tokens, extra=extra)
    if isinstance(item, Action):
        outcome = "success" if item.success else \
            "refused" if item.error_type in REFUSALS else "failure"
        return Step(action=item.tool, args=item.args, observation=item.observation,
                    outcome=outcome,
                    error_type=item.error_type, latency_ms=item.latency_ms,
                    subtask_id=item.subtask_id, extra=extra)
    if isinstance(item, ActionStarted):
        return Step(action=item.tool, args=item.args, outcome="started",
                    subtask_id=item.subtask_id, extra=extra)
    if isinstance(item, UserMessage):
        return Step(action="user", observation=item.text, outcome="user", extra=extra)
    if isinstance(item, PlanMade):
        return Step(action="plan", thought=item.reason, outcome="plan", extra=extra)
    if isinstance(item, Reflection):
        return Step(action="reflection", thought=item.root_cause, outcome="reflection",
                    error_type=item.trigger, extra=extra)
    if isinstance(item, RetryRequest):
        return Step(action="retry_request", thought=item.reason, outcome="retry", extra=extra)
    return Step(action="final", observation=item.output, outcome=item.status, extra=extra)


def from_step(step: Step) -> LogItem | None:
    raw = step.extra.get("item")
    return None if raw is None else ITEM.validate_python(raw)
