"""What the consolidation jobs hand back: run reports and recorded actions.

Plain frozen dataclasses tagged with ``kind``; times are aware UTC datetimes.
A :class:`RunReport` is what ``memstrata runs`` lists; the
:class:`ActionRecord` rows of a run are what ``undo`` replays backwards and
what a dry run shows as :class:`PlannedAction` without writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["ActionRecord", "Method", "PlannedAction", "RunReport", "RunStatus",
           "describe_change", "snippet"]

#: ``queued``: a partitioned run no worker has claimed a bucket of yet
RunStatus = Literal["queued", "running", "finished", "failed", "interrupted", "abandoned",
                    "skipped", "dry_run"]
#: which method did the thinking: an LLM, the deterministic offline rules, or both
#: (the LLM until its token budget ran out, or for some items only)
Method = Literal["offline", "llm", "llm+offline", "none"]


#: columns holding epoch seconds: shown as ISO times
_TIME_COLUMNS = frozenset({"valid_from", "valid_to", "expires_at", "created_at", "updated_at",
                           "last_accessed_at", "deleted_at", "at"})
#: bookkeeping columns a reader does not need to see change
_QUIET_COLUMNS = frozenset({"updated_at", "metadata", "seq"})
SNIPPET_CHARS = 60


def snippet(text: str, width: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _show(column: str, value: Any) -> str:
    if value is None:
        return "-"
    if column in _TIME_COLUMNS and isinstance(value, int | float) \
            and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    if isinstance(value, str):
        return repr(snippet(value, 40))
    return repr(value)


def describe_change(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """What an action does to a record's columns, readable: ``status: active ->
    superseded, valid_to: - -> 2026-03-01T09:00:00+00:00``; times in ISO, long text cut."""
    if before is None and after is None:
        return "row removed for good"
    if before is None:
        assert after is not None
        if "content" in after:
            return f"new record: {_show('content', after['content'])}"
        return "new: " + ", ".join(f"{k}={_show(k, v)}" for k, v in after.items()
                                    if k not in _QUIET_COLUMNS)
    if after is None:
        return "row removed for good"
    keys = [k for k in after if k not in _QUIET_COLUMNS and before.get(k) != after.get(k)]
    return ", ".join(f"{k}: {_show(k, before.get(k))} -> {_show(k, after.get(k))}"
                     for k in keys[:5]) or "no column changes"


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

    def describe(self, content: str | None = None) -> str:
        """One line: the action, the record (``content``: how to show it - a quoted
        snippet, or ``(forgotten)`` - when the caller looked it up), what changes,
        and why."""
        what = f"{self.user_id}/{self.memory_id or '-'}"
        if content is not None:
            what += f" {content}"
        return (f"{self.action:<14} {what}: {describe_change(self.before, self.after)} "
                f"({self.reason})")


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
