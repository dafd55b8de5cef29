"""Errors of the agent kernel, sorted by audience.

* **The model** never sees an exception: a bad tool call, a validation error,
  a refused or failed tool becomes a message (a :class:`~memstrata.agent.tools.ToolResult`
  or a retry request) and the loop goes on.
* **The developer** gets :class:`UsageError` for misuse found at build time
  (a tool without type hints, two tools with one name, an unknown template).
* **A failed run** raises a :class:`RunError` subclass. The task's state is
  already persisted when it is raised, so ``Agent.resume`` can continue.

The tree (all under :class:`memstrata.errors.MemstrataError`)::

    UsageError (also InvalidInputError)     the kernel was used wrongly
    RunError                                a run stopped without reaching its goal
    ├── StepLimitExceeded                   the hard step limit was hit (clean stop)
    ├── ContextBudgetExceeded               the mandatory context does not fit the budget
    ├── TokenBudgetExceeded                 the task spent its token budget
    ├── MalformedOutputError                the model's output stayed unusable after retries
    ├── ReplanLimitExceeded                 the replan budget is spent
    └── ToolCrashError                      a tool raised an exception it did not declare
"""

from __future__ import annotations

from typing import Any

from memstrata.errors import InvalidInputError, MemstrataError

__all__ = [
    "ContextBudgetExceeded",
    "MalformedOutputError",
    "ReplanLimitExceeded",
    "RunError",
    "StepLimitExceeded",
    "TokenBudgetExceeded",
    "ToolCrashError",
    "UsageError",
]


class UsageError(InvalidInputError):
    """The agent kernel was used wrongly (a developer error, found before running)."""


class RunError(MemstrataError):
    """A run stopped before its goal was reached. ``task_id`` and ``result`` say where."""

    def __init__(self, message: str, *, task_id: str | None = None, result: Any = None) -> None:
        super().__init__(message)
        self.task_id = task_id
        #: the :class:`~memstrata.agent.agent.RunResult` at the stop (metrics, table)
        self.result = result


class StepLimitExceeded(RunError):
    """The hard step limit was reached; the task was stopped cleanly and can be resumed."""


class ContextBudgetExceeded(RunError):
    """Even the mandatory part of the context (goal, task table, last round) is over budget."""


class TokenBudgetExceeded(RunError):
    """The task spent more model tokens than its budget allows (clean stop)."""


class MalformedOutputError(RunError):
    """The model's output could not be used within its retry budget."""


class ReplanLimitExceeded(RunError):
    """Replanning was triggered more often than the budget allows."""


class ToolCrashError(RunError):
    """A tool raised an exception it did not declare; the step was recorded first."""
