"""One model turn's tool calls: validate, order, run (parallel where independent).

Validation happens before anything runs: unknown tool, malformed JSON, schema
errors and ungrounded identifiers (not whole words of the user's, see
:mod:`._grounding`) become failed results the model sees.

Ordering: calls of one turn are independent unless they touch the same
resource (the tool's ``resource`` argument, e.g. ``order_id=A1``) and one of
them has side effects, or a side-effecting call names no resource (then it is
ordered against every call). Independent calls run in parallel, at most
``max_parallel`` at a time; dependent ones run after what they depend on, and
are skipped if that failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from memstrata.llm import ToolCall

from ._grounding import grounded_in, tokens
from ._redact import is_secret_name, secret_fields
from .tools import RunContext, Tool, ToolResult, format_validation_error
from .toolsets import Toolset

__all__ = ["Evidence", "Prepared", "execute", "prepare", "waves"]


@dataclass(slots=True)
class Prepared:
    call: ToolCall
    tool: Tool | None
    raw_args: dict[str, Any]
    args: dict[str, Any] | None = None
    rejection: ToolResult | None = None
    subtask_id: str | None = None
    after: set[int] = field(default_factory=set)

    @property
    def runnable(self) -> bool:
        return self.rejection is None and self.tool is not None and self.args is not None


@dataclass(frozen=True, slots=True)
class Evidence:
    """What may ground an identifier, as tokens (:mod:`._grounding`)."""

    #: the goal's intent and the user's messages
    user: Sequence[str]
    #: what successful tool calls returned (only for ``Grounded(tool_outputs=True)``)
    tools: Sequence[str] = ()

    @classmethod
    def of(cls, user_text: str, tool_text: str = "") -> Evidence:
        return cls(tokens(user_text), tokens(tool_text))


def _grounding_problem(tool: Tool, args: Mapping[str, Any], evidence: Evidence) -> str | None:
    for name in sorted(tool.grounded):
        value = args.get(name)
        if value is None:
            continue
        if grounded_in(value, evidence.user):
            continue
        if name in tool.grounded_by_tools and grounded_in(value, evidence.tools):
            continue
        shown = "[redacted]" if name in secret_fields(tool) or is_secret_name(name) \
            else repr(value)
        return (f"{name}={shown} is not something the user said in this task (whole words "
                f"only); do not guess it - ask the user for the {name}")
    return None


def prepare(calls: Sequence[ToolCall], tools: Mapping[str, Tool], evidence: Evidence,
            attribute: Callable[[str, Mapping[str, Any]], str | None]) -> list[Prepared]:
    out: list[Prepared] = []
    for call in calls:
        tool = tools.get(call.name)
        try:
            raw = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            out.append(Prepared(call, tool, {"_raw": call.arguments}, rejection=ToolResult.fail(
                f"the arguments of {call.name} are not valid JSON ({exc.msg} at position "
                f"{exc.pos}); send a JSON object", "malformed_arguments")))
            continue
        if not isinstance(raw, dict):
            out.append(Prepared(call, tool, {"_raw": raw}, rejection=ToolResult.fail(
                f"the arguments of {call.name} must be a JSON object", "malformed_arguments")))
            continue
        if tool is None:
            known = ", ".join(sorted(tools)) or "none"
            out.append(Prepared(call, None, raw, rejection=ToolResult.fail(
                f"there is no tool named {call.name!r}; the tools are: {known}",
                "unknown_tool")))
            continue
        try:
            args = tool.validate(raw)
        except ValidationError as exc:
            out.append(Prepared(call, tool, raw, rejection=ToolResult.fail(
                format_validation_error(tool.name, exc), "validation"),
                subtask_id=attribute(tool.name, raw)))
            continue
        problem = _grounding_problem(tool, args, evidence)
        if problem is not None:
            out.append(Prepared(call, tool, raw, args=args, subtask_id=attribute(tool.name, args),
                                rejection=ToolResult.fail(problem, "not_grounded")))
            continue
        out.append(Prepared(call, tool, raw, args=args, subtask_id=attribute(tool.name, args)))
    _link(out)
    return out


def _link(prepared: list[Prepared]) -> None:
    for j, later in enumerate(prepared):
        if not later.runnable:
            continue
        assert later.tool is not None and later.args is not None
        res_j, ro_j = later.tool.resource_of(later.args), later.tool.read_only
        for i in range(j):
            earlier = prepared[i]
            if not earlier.runnable:
                continue
            assert earlier.tool is not None and earlier.args is not None
            res_i, ro_i = earlier.tool.resource_of(earlier.args), earlier.tool.read_only
            if ro_i and ro_j:
                continue
            unscoped_write = (not ro_i and res_i is None) or (not ro_j and res_j is None)
            if unscoped_write or (res_i is not None and res_i == res_j):
                later.after.add(i)


def waves(prepared: Sequence[Prepared]) -> list[list[int]]:
    """Groups of runnable calls; every call comes after the calls it depends on."""
    level: dict[int, int] = {}
    for j, p in enumerate(prepared):
        if p.runnable:
            level[j] = 1 + max((level[i] for i in p.after if i in level), default=-1)
    out: list[list[int]] = [[] for _ in range(1 + max(level.values(), default=-1))]
    for j, lv in level.items():
        out[lv].append(j)
    return out


def execute(
    prepared: Sequence[Prepared],
    toolset: Toolset,
    make_ctx: Callable[[Prepared], RunContext[Any]],
    executor: Executor | None,
    *,
    before: Callable[[int], None] = lambda i: None,
) -> list[ToolResult]:
    """Run the calls wave by wave; ``before(i)`` runs in this thread before call i starts."""
    results: list[ToolResult | None] = [p.rejection for p in prepared]
    for wave in waves(prepared):
        ready: list[int] = []
        for j in wave:
            failed = [i for i in prepared[j].after if not _succeeded(results[i])]
            if failed:
                first = prepared[failed[0]].call.name
                results[j] = ToolResult.fail(
                    f"skipped: it depends on {first}, which did not succeed", "skipped",
                    retriable=True)
            else:
                before(j)
                ready.append(j)

        def run(j: int) -> ToolResult:
            p = prepared[j]
            assert p.tool is not None and p.args is not None
            return toolset.call(p.tool, dict(p.args), make_ctx(p))

        if len(ready) == 1 or executor is None:
            for j in ready:
                results[j] = run(j)
        else:
            futures = {j: executor.submit(run, j) for j in ready}
            for j, fut in futures.items():
                results[j] = fut.result()
    return [r if r is not None else ToolResult.fail("not run", "skipped") for r in results]


def _succeeded(result: ToolResult | None) -> bool:
    return result is not None and result.success
