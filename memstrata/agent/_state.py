"""Folding recorded steps into the task table - one pure function.

The live loop and a resumed run use the same :func:`apply`, so the table a
resume rebuilds from the episodic log is the table the crashed process had.
"""

from __future__ import annotations

from .goal import SubtaskSpec, TaskState
from .steps import (
    Action,
    ActionStarted,
    Final,
    LogEntry,
    ModelTurn,
    PlanMade,
    Reflection,
    UserMessage,
)

__all__ = ["SELF_CORRECTING", "apply"]

#: failures the model fixes by itself (they do not count toward a replan)
SELF_CORRECTING = frozenset({"validation", "malformed_arguments", "not_grounded",
                             "unknown_tool", "denied", "duplicate", "confirmation_required"})


def apply(state: TaskState, entry: LogEntry, *, drift_threshold: float) -> None:
    item = entry.item
    if isinstance(item, ModelTurn):
        state.turn = max(state.turn, item.turn)
        state.prompt_tokens += item.prompt_tokens
        state.completion_tokens += item.completion_tokens
        if item.goal_similarity is not None:
            state.drift_strikes = state.drift_strikes + 1 \
                if item.goal_similarity < drift_threshold else 0
    elif isinstance(item, ActionStarted):
        sub = state.get(item.subtask_id)
        if sub is not None and sub.status in ("pending", "failed"):
            sub.move("running")
    elif isinstance(item, Action):
        state.tool_calls += 1
        if item.success and not item.cached:
            state.effective_calls += 1
        sub = state.get(item.subtask_id)
        if sub is not None and sub.open:
            sub.attempts += 1
            sub.steps.append(entry.step_no)
            sub.last_result = item.observation[:160]
            if item.subtask_status == "done":
                sub.move("done")
            elif item.subtask_status == "failed":
                sub.move("failed")
            elif sub.status in ("pending", "failed"):
                sub.move("running")
        if item.success:
            state.consecutive_failures = 0
        elif item.error_type not in SELF_CORRECTING:
            state.consecutive_failures += 1
            state.failures_by_tool[item.tool] = state.failures_by_tool.get(item.tool, 0) + 1
    elif isinstance(item, PlanMade):
        specs = [SubtaskSpec(s["title"], s["criterion"], s.get("tool"), dict(s.get("args") or {}))
                 for s in item.subtasks]
        state.add_plan(specs, source=item.source)
        state.prompt_tokens += item.prompt_tokens
        state.completion_tokens += item.completion_tokens
        if item.version > 1:
            state.replans += 1
        state.phase = "acting"
    elif isinstance(item, UserMessage):
        if item.correction:
            state.corrections += 1
        if state.phase == "awaiting_user":
            state.phase = "acting" if state.plan_version else "planning"
    elif isinstance(item, Reflection):
        if item.key and item.key not in state.reflected:
            state.reflected.append(item.key)
    elif isinstance(item, Final):
        state.phase = "done" if item.status == "done" else (
            "awaiting_user" if item.status == "awaiting_user" else "failed")
        state.output = item.output
        state.stop_reason = item.reason
    state.applied_step = max(state.applied_step, entry.step_no)
