"""The hybrid planner: plan up front, act step by step, replan only on a trigger.

* **Up-front plan** - from the model (it calls ``submit_plan`` with subtasks,
  each serving one acceptance criterion and optionally naming its tool), or
  from a :class:`PlanTemplate` registered for a fixed business flow, whose
  parameters the model fills (``fill_parameters``; grounded parameters must
  appear in what the user said). If the model's plan stays invalid after
  ``plan_retries``, the kernel falls back to one subtask per criterion and
  says so - a run never starts without a table.
* **Replan triggers** (decided by the loop, carried out here): two consecutive
  failed actions, an error type no tool registered, or goal drift - the
  model's echoed goal sentence (or its thought) drifting below an embedding
  similarity to the goal for ``drift_patience`` turns. Replanning keeps done
  subtasks and abandons the open ones of the old plan.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memstrata.llm import ChatResult
from memstrata.memory.embedder import Embedder

from ._fence import memory_block, new_nonce
from ._grounding import grounded_in, tokens
from ._prompts import prompt
from .errors import UsageError
from .goal import Criterion, Goal, SubtaskSpec, TaskState
from .tools import Grounded, Tool

__all__ = ["DriftDetector", "PlanOutcome", "PlanTemplate", "Planner"]

#: (messages, tools, purpose) -> the model's answer (recorded by the agent)
ModelCall = Callable[[list[dict[str, Any]], list[dict[str, Any]], str], ChatResult]


class _PlanItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=300, description="What to do, in a few words")
    criterion: str = Field(description="Id of the acceptance criterion it serves, e.g. c1")
    tool: str | None = Field(default=None, description="The tool that does it, if one does")
    args: dict[str, Any] = Field(default_factory=dict,
                                 description="Known arguments for that tool")


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subtasks: list[_PlanItem] = Field(min_length=1, max_length=12)


_PLAN_TOOL = {"type": "function", "function": {
    "name": "submit_plan", "description": "Submit the ordered subtasks of the plan.",
    "parameters": _Plan.model_json_schema()}}


@dataclass(frozen=True, slots=True)
class PlanTemplate:
    """A fixed business flow: its subtasks, with ``{parameter}`` placeholders in titles
    and string arguments, and the pydantic model of its parameters."""

    name: str
    description: str
    parameters: type[BaseModel]
    subtasks: Sequence[SubtaskSpec]

    def instantiate(self, params: Mapping[str, Any]) -> list[SubtaskSpec]:
        def fill(value: Any) -> Any:
            return string.Formatter().vformat(value, (), dict(params)) \
                if isinstance(value, str) else value

        try:
            return [SubtaskSpec(fill(s.title), s.criterion, s.tool,
                                {k: fill(v) for k, v in s.args.items()})
                    for s in self.subtasks]
        except KeyError as exc:
            raise UsageError(f"template {self.name}: unknown placeholder {exc}") from exc

    def definition(self) -> dict[str, Any]:
        schema = self.parameters.model_json_schema()
        return {"type": "function", "function": {
            "name": "fill_parameters",
            "description": f"Parameters of the flow '{self.name}': {self.description}",
            "parameters": schema}}

    def grounded(self) -> frozenset[str]:
        return frozenset(
            name for name, f in self.parameters.model_fields.items()
            if any(isinstance(m, Grounded) for m in f.metadata)
        )


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    specs: list[SubtaskSpec] | None
    source: str
    reason: str
    #: the model asked the user instead of planning (e.g. a missing parameter)
    question: str | None = None
    params: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)


def _criteria_text(criteria: Sequence[Criterion]) -> str:
    return "\n".join(f"- {c.id}: {c.text}" for c in criteria)


def _tools_text(tools: Sequence[Tool]) -> str:
    return "\n".join(f"- {t.name} ({t.risk.value}): {t.description.splitlines()[0]}"
                     for t in tools) or "- (no tools)"


class Planner:
    def __init__(self, templates: Sequence[PlanTemplate] = (), *, plan_retries: int = 1) -> None:
        self.templates: dict[str, PlanTemplate] = {}
        for t in templates:
            if t.name in self.templates:
                raise UsageError(f"two plan templates are named {t.name!r}")
            self.templates[t.name] = t
        self.plan_retries = plan_retries

    def plan(self, call: ModelCall, goal: Goal, criteria: Sequence[Criterion],
             tools: Sequence[Tool], evidence: str, *, state: TaskState | None = None,
             reason: str | None = None) -> PlanOutcome:
        if goal.template is not None and reason is None:
            template = self.templates.get(goal.template)
            if template is None:
                raise UsageError(f"no plan template named {goal.template!r}; registered: "
                                 f"{sorted(self.templates)}")
            return self._from_template(call, goal, template, evidence)
        return self._from_model(call, goal, criteria, tools, state, reason)

    def _from_model(self, call: ModelCall, goal: Goal, criteria: Sequence[Criterion],
                    tools: Sequence[Tool], state: TaskState | None,
                    reason: str | None) -> PlanOutcome:
        ids = {c.id for c in criteria}
        names = {t.name for t in tools}
        body = (f"Goal: {goal.intent}\nAcceptance criteria:\n{_criteria_text(criteria)}\n"
                f"Constraints: {'; '.join(goal.constraints) or 'none'}\n"
                f"Tools:\n{_tools_text(tools)}")
        if state is not None and reason is not None:
            # the reason quotes tool errors and the table model-written titles: data
            block = memory_block(new_nonce(), [("replan_reason", [reason]),
                                               ("current_table", state.render().splitlines())])
            body += (f"\n\nREPLAN. Why, and the current table:\n{block}\n"
                     "Plan only the remaining work; done subtasks stay done.")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompt("planner")},
            {"role": "user", "content": body}]
        purpose = "replan" if reason else "plan"
        problems: list[str] = []
        for _ in range(self.plan_retries + 1):
            answer = call(messages, [_PLAN_TOOL], purpose)
            submitted = [c for c in answer.tool_calls if c.name == "submit_plan"]
            if not submitted:
                problems.append("the model did not call submit_plan")
                messages += [{"role": "assistant", "content": answer.content or ""},
                             {"role": "user", "content": "Call submit_plan with the subtasks."}]
                continue
            try:
                plan = _Plan.model_validate(json.loads(submitted[0].arguments or "{}"))
                bad = [f"criterion {i.criterion!r} is not one of {sorted(ids)}"
                       for i in plan.subtasks if i.criterion not in ids]
                bad += [f"tool {i.tool!r} does not exist" for i in plan.subtasks
                        if i.tool is not None and i.tool not in names]
                if bad:
                    raise ValueError("; ".join(bad))
            except (ValueError, ValidationError) as exc:
                problems.append(str(exc)[:300])
                messages += [
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": submitted[0].id, "type": "function", "function": {
                            "name": "submit_plan", "arguments": submitted[0].arguments}}]},
                    {"role": "tool", "tool_call_id": submitted[0].id,
                     "content": f"ERROR: invalid plan: {str(exc)[:500]}. Submit a corrected "
                                "plan."}]
                continue
            specs = [SubtaskSpec(i.title, i.criterion, i.tool, dict(i.args))
                     for i in plan.subtasks]
            return PlanOutcome(specs, "llm", reason or "initial plan", problems=problems)
        specs = [SubtaskSpec(f"Satisfy: {c.text}", c.id) for c in criteria]
        return PlanOutcome(specs, "criteria",
                           f"fallback: no valid plan from the model ({'; '.join(problems)})",
                           problems=problems)

    def _from_template(self, call: ModelCall, goal: Goal, template: PlanTemplate,
                       evidence: str) -> PlanOutcome:
        system = prompt("fill_template").format(name=template.name,
                                                description=template.description)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": evidence.strip() or goal.intent}]
        problems: list[str] = []
        for _ in range(self.plan_retries + 1):
            answer = call(messages, [template.definition()], "fill_template")
            filled = [c for c in answer.tool_calls if c.name == "fill_parameters"]
            if not filled:
                if answer.content and answer.content.strip():
                    return PlanOutcome(None, f"template:{template.name}", "a parameter is "
                                       "missing; asking the user",
                                       question=answer.content.strip(), problems=problems)
                problems.append("no parameters and no question")
                continue
            try:
                params = template.parameters.model_validate(
                    json.loads(filled[0].arguments or "{}")).model_dump()
                said = tokens(evidence)
                for name in sorted(template.grounded()):
                    value = params.get(name)
                    if value is not None and not grounded_in(value, said):
                        raise ValueError(f"{name}={value!r} was not given by the user; ask "
                                         "for it instead of guessing")
            except (ValueError, ValidationError) as exc:
                problems.append(str(exc)[:300])
                messages += [
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": filled[0].id, "type": "function", "function": {
                            "name": "fill_parameters", "arguments": filled[0].arguments}}]},
                    {"role": "tool", "tool_call_id": filled[0].id,
                     "content": f"ERROR: {str(exc)[:500]}"}]
                continue
            return PlanOutcome(template.instantiate(params), f"template:{template.name}",
                               "template with model-filled parameters", params=params,
                               problems=problems)
        return PlanOutcome(None, f"template:{template.name}", "parameters could not be filled",
                           question="Could you give me the details this request needs?",
                           problems=problems)


class DriftDetector:
    """Embedding similarity between the goal sentence and what the model says it does."""

    def __init__(self, embedder: Embedder, *, threshold: float = 0.3) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self._goal: tuple[str, np.ndarray] | None = None

    def similarity(self, goal_sentence: str, text: str) -> float:
        if self._goal is None or self._goal[0] != goal_sentence:
            self._goal = (goal_sentence, self.embedder.embed([goal_sentence])[0])
        vec = self.embedder.embed([text])[0]
        return float(np.dot(self._goal[1], vec))

    def drifted(self, goal_sentence: str, text: str | None) -> tuple[bool, float | None]:
        if not text or not text.strip():
            return False, None
        sim = self.similarity(goal_sentence, text)
        return sim < self.threshold, sim


Parameter = Annotated[str, Grounded()]
