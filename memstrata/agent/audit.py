"""Audit: per-task metrics, the one-line lesson, and reflection reports.

* **Metrics** (stored in the task state and returned with the run): done by the
  acceptance criteria, criteria met, steps (model turns), tool calls, the
  effective tool-call ratio (calls that succeeded and were not cache repeats,
  over all calls), user corrections, replans, reflections and tokens.
* **Lesson** - one line written to long-term memory through the write policy
  (``type=experience, verified=True``), only when the task met every
  criterion; it links to the task and the final step. A later rejection by the
  user (``Agent.feedback``) forgets it again.
* **Reflection** - on a timed-out action, a failed side-effecting action,
  repeated failures of one tool or a failed run: a structured report (trigger,
  root cause, evidence step numbers, suggested fix) recorded in the trajectory
  and shown to the planner when it replans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .goal import Criterion, Goal, TaskState
from .steps import Action, LogEntry, Reflection

__all__ = ["lesson_line", "metrics", "reflect"]

_CAUSES: dict[str, tuple[str, str]] = {
    "timeout": ("the tool did not answer within its timeout",
                "check the backend's health or raise the tool's timeout; do not repeat blindly"),
    "circuit_open": ("the tool's circuit breaker is open after repeated failures",
                     "wait for the cooldown or reach the goal another way"),
    "unavailable": ("the tool's backend could not be reached",
                    "retry later or use another tool"),
    "validation": ("the model sent arguments that do not match the tool's schema",
                   "read the tool's parameters and send every required field"),
    "malformed_arguments": ("the model sent arguments that are not a JSON object",
                            "send a JSON object of arguments"),
    "not_grounded": ("the model used a value the user never gave",
                     "ask the user for the missing value instead of guessing"),
    "unknown_tool": ("the model called a tool that does not exist",
                     "use one of the registered tools"),
    "denied": ("the user declined the action", "ask the user how to proceed"),
    "refused": ("the action is dangerous (L3) and no human approved it",
                "ask a human for approval or choose a safer action"),
    "confirmation_required": ("the action needs a confirmation channel",
                              "configure a confirm callback or tell the user the plan"),
    "duplicate": ("the model repeated a side effect that already succeeded",
                  "trust the task table: that subtask is done"),
    "step_limit": ("the task used all its steps without meeting its criteria",
                   "split the goal, raise max_steps, or fix the failing subtask first"),
}


def metrics(state: TaskState, criteria: Sequence[Criterion], *, done: bool) -> dict[str, Any]:
    met = [c.id for c in criteria if state.criterion_met(c.id)]
    calls = state.tool_calls
    return {
        "done": done,
        "criteria_met": len(met),
        "criteria_total": len(criteria),
        "steps": state.turn,
        "tool_calls": calls,
        "effective_tool_calls": state.effective_calls,
        "effective_tool_call_ratio": round(state.effective_calls / calls, 3) if calls else None,
        "user_corrections": state.corrections,
        "replans": state.replans,
        "reflections": len(state.reflected),
        "prompt_tokens": state.prompt_tokens,
        "completion_tokens": state.completion_tokens,
        "tokens": state.prompt_tokens + state.completion_tokens,
    }


def lesson_line(goal: Goal, entries: Sequence[LogEntry], state: TaskState) -> str:
    """'To <goal>: <what worked> in N steps; <what failed first>' - deterministic, no LLM."""
    worked: list[str] = []
    failed: list[str] = []
    for e in entries:
        item = e.item
        if isinstance(item, Action) and not item.cached:
            if item.success and (not worked or worked[-1] != item.tool):
                worked.append(item.tool)
            elif not item.success and item.error_type:
                note = f"{item.tool} failed with {item.error_type}"
                if note not in failed:
                    failed.append(note)
    text = f"To '{goal.sentence[:120]}': "
    text += (" then ".join(worked) if worked else "answering directly") + \
        f" worked in {state.turn} steps"
    if failed:
        text += "; first " + ", ".join(failed[:3])
    return text[:400]


def reflect(trigger: str, entries: Sequence[LogEntry], *, tool: str | None = None,
            error_type: str | None = None, key: str = "") -> Reflection:
    """A structured report from the recorded steps (no model call)."""
    evidence = [e.step_no for e in entries
                if isinstance(e.item, Action) and not e.item.success
                and (tool is None or e.item.tool == tool)][-5:]
    last = next((e.item for e in reversed(entries)
                 if isinstance(e.item, Action) and not e.item.success
                 and (tool is None or e.item.tool == tool)), None)
    kind = error_type or (last.error_type if last is not None else None) or trigger
    cause, fix = _CAUSES.get(kind, (f"{tool or 'a tool'} failed with an error type "
                                    f"({kind}) no tool registered",
                                    "replan around it and register the error type if expected"))
    if last is not None and last.error:
        cause = f"{cause} (last error: {last.error[:160]})"
    return Reflection(trigger=trigger, root_cause=cause, evidence=evidence, suggested_fix=fix,
                      tool=tool, key=key)
