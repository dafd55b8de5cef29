"""The agent: one short loop over memory, model and governed tools.

::

    agent = Agent(model, memory=manager, tools=[query_order, modify_address],
                  deps_type=Shop, confirm=ask_the_user)
    result = agent.run("Change the address of order A1001 to 5 Rue Lepic, Paris",
                       user="alice", scope="orders", deps=shop)

Each turn of :meth:`Agent.iter` (a generator yielding every recorded step):
build the context from memory -> call the model -> parse (goal echo, thought,
tool calls) -> validate -> act (governed toolset; parallel where independent)
-> record each step in the episodic store -> update the task table -> check the
replan / reflection triggers and acceptance. A text reply ends the run: *done*
when every acceptance criterion is met (a lesson is written to long-term
memory), otherwise *awaiting_user* (a question; :meth:`Agent.resume` with the
user's answer continues). The task can always be resumed after a crash: the
table is replayed from the recorded steps.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import re
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

from memstrata.config import DEFAULT_SCOPE
from memstrata.errors import MemstrataError
from memstrata.llm import CallRow, ChatResult, LLMClient, RecordingModel, list_calls
from memstrata.memory.episodic import Step
from memstrata.types import WriteDecision

from . import _dispatch, audit
from ._fence import new_nonce
from ._redact import redact, redact_call, redact_json, secret_fields
from ._state import SELF_CORRECTING, apply
from ._summary import summarize
from .context import BuiltContext, ContextBuilder, ContextSettings, MemoryContext, TokenCounter
from .errors import (
    ReplanLimitExceeded,
    RunError,
    StepLimitExceeded,
    TokenBudgetExceeded,
    ToolCrashError,
    UsageError,
)
from .goal import STATE, Goal, TaskState
from .memory_view import MemoryView, brief
from .planner import DriftDetector, Planner, PlanTemplate
from .steps import (
    Action,
    ActionStarted,
    Final,
    LogEntry,
    LogItem,
    ModelTurn,
    PlanMade,
    Reflection,
    RetryRequest,
    UserMessage,
    from_step,
    to_step,
)
from .tools import Risk, RunContext, Tool, ToolResult, canonical_args, tool
from .toolsets import (
    BreakerPolicy,
    CachingToolset,
    Decider,
    FunctionToolset,
    RetryBackoff,
    RiskGate,
    Toolset,
)

__all__ = ["Agent", "AgentSettings", "RunResult"]

DepsT = TypeVar("DepsT")
_ECHO = re.compile(r"^\s*(?:goal|目标)\s*[:：]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Limits and thresholds of the loop (all budgets are explicit)."""

    #: model turns per run or resume call (hard limit; clean stop with StepLimitExceeded)
    max_steps: int = 30
    max_replans: int = 3
    #: consecutive failed actions that trigger a replan
    failures_before_replan: int = 2
    #: failures of one tool in a task that trigger a reflection report
    repeated_failures_reflect: int = 2
    #: ask again (up to ``echo_retries`` times) when a reply lacks the goal echo
    require_echo: bool = False
    echo_retries: int = 2
    #: goal drift: similarity below ``drift_threshold`` for ``drift_patience`` turns
    drift_threshold: float = 0.3
    drift_patience: int = 2
    detect_drift: bool = True
    #: tool calls of one turn run at most this many at a time
    max_parallel: int = 4
    #: identical read-only calls within this many seconds come from the cache
    cache_ttl: float = 30.0
    #: refuse a side-effecting call identical to one that already succeeded in the task
    block_repeated_side_effects: bool = True
    #: model tokens per task (None: unlimited)
    token_budget: int | None = None
    #: re-read memories every this many turns even if the subtask did not change
    recall_refresh_turns: int = 10
    #: write a one-line lesson to long-term memory for verified outcomes
    write_lessons: bool = True
    context: ContextSettings = field(default_factory=ContextSettings)
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)
    backoff: RetryBackoff = field(default_factory=RetryBackoff)

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.max_parallel < 1 or self.max_replans < 0:
            raise UsageError("max_steps and max_parallel must be >= 1, max_replans >= 0")


@dataclass(frozen=True, slots=True)
class RunResult:
    task_id: str
    status: Literal["done", "awaiting_user", "failed"]
    #: the final answer, or the question for the user
    output: str | None
    metrics: dict[str, Any]
    subtasks: list[dict[str, Any]]
    reflections: list[Reflection]
    lesson: Any = None
    #: the context report of the last turn (what was included, folded and why)
    context: BuiltContext | None = None


@dataclass(slots=True)
class _Run:
    user_id: str
    scope: str
    task_id: str
    goal: Goal
    deps: Any
    state: TaskState
    version: int
    entries: list[LogEntry] = field(default_factory=list)
    memory_context: MemoryContext | None = None
    memory_context_key: tuple[Any, ...] = ()
    last_context: BuiltContext | None = None
    #: drawn per run: the tags of the data blocks carry it, so stored text cannot
    #: close or imitate them (:mod:`._fence`)
    nonce: str = field(default_factory=new_nonce)

    @property
    def criteria(self) -> list[Any]:
        return self.goal.criteria()

    def user_words(self) -> str:
        """What the user said in this task: the goal's intent and their messages."""
        parts = [self.goal.intent]
        parts += [e.item.text for e in self.entries if isinstance(e.item, UserMessage)]
        return "\n".join(parts)

    def evidence(self) -> _dispatch.Evidence:
        outputs = [json.dumps(e.item.data, ensure_ascii=False, default=str)
                   for e in self.entries if isinstance(e.item, Action) and e.item.success]
        return _dispatch.Evidence.of(self.user_words(), "\n".join(outputs))

    def interrupted(self) -> list[ActionStarted]:
        done = {(e.item.turn, e.item.call_id) for e in self.entries if isinstance(e.item, Action)}
        return [e.item for e in self.entries if isinstance(e.item, ActionStarted)
                and (e.item.turn, e.item.call_id) not in done]


def _complete_subtask(subtask_id: str, summary: str) -> dict[str, str]:
    """Mark a subtask of the task table done when no tool call completes it by itself
    (e.g. "ask the user for the order number" once they answered).

    Args:
        subtask_id: The id from the task table, e.g. "s1".
        summary: One line saying what was achieved.
    """
    return {"subtask_id": subtask_id, "summary": summary}


COMPLETE_SUBTASK = tool(name="complete_subtask", cache=False, timeout=None)(_complete_subtask)


class Agent(Generic[DepsT]):
    """See the module docstring. Thread-safe for runs of different tasks."""

    def __init__(
        self,
        model: LLMClient,
        *,
        memory: MemoryView,
        tools: Sequence[Tool] = (),
        deps_type: type[DepsT] | None = None,
        instructions: str | None = None,
        templates: Sequence[PlanTemplate] = (),
        confirm: Decider | None = None,
        approve: Decider | None = None,
        settings: AgentSettings | None = None,
        token_counter: TokenCounter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if memory is None:  # an untyped caller's slip; the type says the rest
            raise UsageError("an Agent needs a MemoryManager: Agent(model, memory=manager)")
        self.memory = memory
        self.settings = settings or AgentSettings()
        self.deps_type = deps_type
        self._model = model
        self._clock = memory.clock
        self._functions = FunctionToolset([*tools, COMPLETE_SUBTASK], breaker=self.settings.breaker,
                                          backoff=self.settings.backoff, clock=self._clock,
                                          sleep=sleep)
        self.cache = CachingToolset(self._functions, ttl=self.settings.cache_ttl,
                                    clock=self._clock)
        self._gate = RiskGate(self.cache, confirm=confirm, approve=approve)
        #: what the call log stores of tool-call arguments (secrets redacted)
        self._redact_call = redact_call({t.name: t for t in self._functions.tools()})
        self.planner = Planner(templates)
        self._counter = token_counter
        self._instructions = instructions
        self._builder: ContextBuilder | None = None
        self._drift: DriftDetector | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._overrides: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
            f"agent-overrides-{id(self)}", default=MappingProxyType({}))

    # ------------------------------------------------------------ parts

    @property
    def model(self) -> LLMClient:
        return self._overrides.get().get("model", self._model)  # type: ignore[no-any-return]

    @property
    def toolset(self) -> Toolset:
        return self._overrides.get().get("toolset", self._gate)  # type: ignore[no-any-return]

    def _tool(self, name: str | None) -> Tool | None:
        return next((t for t in self._functions.tools() if t.name == name), None)

    def breaker(self, tool_name: str) -> Any:
        return self._functions.breaker(tool_name)

    @property
    def builder(self) -> ContextBuilder:
        if self._builder is None:
            counter = self._counter or self.memory.embedder
            self._builder = ContextBuilder(counter, self.settings.context,
                                           instructions=self._instructions)
        return self._builder

    @contextlib.contextmanager
    def override(self, *, model: LLMClient | None = None, deps: Any = None,
                 confirm: Decider | None = None, approve: Decider | None = None
                 ) -> Iterator[None]:
        """Swap parts for the duration of a ``with`` block (tests); other threads and
        tasks are unaffected (a context variable)."""
        values = dict(self._overrides.get())
        if model is not None:
            values["model"] = model
        if deps is not None:
            values["deps"] = deps
        if confirm is not None or approve is not None:
            gate = self._gate
            values["toolset"] = RiskGate(self.cache, confirm=confirm or gate.confirm,
                                         approve=approve or gate.approve)
        token = self._overrides.set(values)
        try:
            yield
        finally:
            self._overrides.reset(token)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> Agent[DepsT]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ public API

    def run(self, goal: Goal | str, *, user: str, scope: str = DEFAULT_SCOPE,
            deps: DepsT | None = None, task_id: str | None = None) -> RunResult:
        """Run a new task to its end (done, a question for the user, or a RunError)."""
        return _drain(self.iter(goal, user=user, scope=scope, deps=deps, task_id=task_id))

    def resume(self, task_id: str, *, user: str, deps: DepsT | None = None,
               message: str | None = None, correction: bool = False) -> RunResult:
        """Continue a task after a crash or with the user's answer; done subtasks stay done."""
        return _drain(self.iter_resume(task_id, user=user, deps=deps, message=message,
                                       correction=correction))

    def iter(self, goal: Goal | str, *, user: str, scope: str = DEFAULT_SCOPE,
             deps: DepsT | None = None, task_id: str | None = None
             ) -> Generator[LogEntry, None, RunResult]:
        goal = Goal(intent=goal) if isinstance(goal, str) else goal
        if goal.template is not None and goal.template not in self.planner.templates:
            raise UsageError(f"no plan template named {goal.template!r}")
        state = TaskState()
        record = self.memory.episodic.start_task(
            user, goal.model_dump(mode="json"), scope=scope, task_id=task_id,
            state=STATE.dump_python(state, mode="json"), status="running")
        run = _Run(record.user_id, scope, record.task_id, goal, self._deps(deps), state,
                   record.version)
        yield self._record(run, UserMessage(goal.intent))
        return (yield from self._loop(run))

    def iter_resume(self, task_id: str, *, user: str, deps: DepsT | None = None,
                    message: str | None = None, correction: bool = False
                    ) -> Generator[LogEntry, None, RunResult]:
        found = self.memory.episodic.resume(user, task_id)
        task = found.task
        state = STATE.validate_python(task.state) if task.state else TaskState()
        run = _Run(task.user_id, task.scope, task.task_id, Goal.model_validate(task.goal),
                   self._deps(deps), state, task.version)
        for rec in found.steps:
            item = from_step(rec.step)
            if item is None:
                continue
            entry = LogEntry(rec.step_no, item)
            run.entries.append(entry)
            if rec.step_no > state.applied_step:  # recorded after the last saved table
                apply(state, entry, drift_threshold=self.settings.drift_threshold)
        if task.status != "running":
            run.version = self.memory.episodic.update_task(
                run.user_id, task_id, status="running", expected_version=run.version).version
        if message is not None:
            yield self._record(run, UserMessage(message, correction=correction))
        if run.state.phase in ("done", "failed", "awaiting_user"):
            run.state.phase = "acting" if run.state.plan_version else "planning"
        return (yield from self._loop(run))

    def feedback(self, user: str, task_id: str, *, accepted: bool,
                 comment: str | None = None) -> None:
        """The user's verdict on a finished task; a rejection forgets its lesson."""
        task = self.memory.episodic.get_task(user, task_id)
        state = STATE.validate_python(task.state)
        if not accepted:
            state.corrections += 1
            if state.lesson_id is not None:
                self.memory.forget(user, state.lesson_id, reason="the user rejected the outcome")
                state.lesson_id = None
        self.memory.episodic.update_task(
            user, task_id, state=STATE.dump_python(state, mode="json"),
            feedback={"accepted": accepted, "comment": comment},
            expected_version=task.version)

    def trajectory(self, user: str, task_id: str) -> list[LogEntry]:
        found = self.memory.episodic.trajectory(user, task_id)
        out = []
        for rec in found.steps:
            item = from_step(rec.step)
            if item is not None:
                out.append(LogEntry(rec.step_no, item))
        return out

    def calls(self, user: str, task_id: str | None = None) -> list[CallRow]:
        """The recorded model calls (prompt, response, tokens, latency)."""
        return list_calls(self.memory.db, user, task_id)

    # ------------------------------------------------------------ the loop

    def _loop(self, run: _Run) -> Generator[LogEntry, None, RunResult]:
        cfg = self.settings
        tools = {t.name: t for t in self.toolset.tools()}
        definitions = [t.definition() for t in tools.values()]
        if run.state.phase == "planning":
            question = yield from self._plan(run, reason=None)
            if question is not None:
                return (yield from self._pause(run, question))
        echo_retries = 0
        first_turn = run.state.turn  # the limit is per run/resume call
        while True:
            if run.state.turn - first_turn >= cfg.max_steps:
                return (yield from self._fail(run, "step_limit", StepLimitExceeded))
            spent = run.state.prompt_tokens + run.state.completion_tokens
            if cfg.token_budget is not None and spent >= cfg.token_budget:
                return (yield from self._fail(run, "token_budget", TokenBudgetExceeded))
            turn = run.state.turn + 1
            context = self._context(run)
            answer = self._chat(run, context.messages, definitions, "act", turn)
            echo, thought = _parse(answer.content)
            similarity = self._similarity(run, echo or thought)
            yield self._record(run, ModelTurn(
                turn, answer.content, echo, thought,
                [{"id": c.id, "name": c.name, "arguments": redact_json(
                    c.arguments, secret_fields(tools.get(c.name)))}
                 for c in answer.tool_calls],
                answer.usage.prompt_tokens, answer.usage.completion_tokens,
                answer.latency_ms, context.tokens, similarity))
            if not answer.tool_calls:
                if cfg.require_echo and echo is None and echo_retries < cfg.echo_retries:
                    echo_retries += 1
                    yield self._record(run, RetryRequest(
                        turn, f"Begin your reply with the line 'Goal: {run.goal.sentence}'."))
                    self._save(run)
                    continue
                text = (thought or answer.content or "").strip()
                if not run.state.unmet(run.criteria):
                    return (yield from self._finish(run, text))
                return (yield from self._pause(run, text))
            actions = yield from self._act(run, answer, tools, turn)
            self._save(run)
            yield from self._after_actions(run, actions, tools)

    def _plan(self, run: _Run, reason: str | None) -> Generator[LogEntry, None, str | None]:
        tools = [t for t in self.toolset.tools() if t.name != COMPLETE_SUBTASK.name]

        spent = [0, 0]

        def call(messages: list[dict[str, Any]], defs: list[dict[str, Any]],
                 purpose: str) -> ChatResult:
            answer = self._chat(run, messages, defs, purpose, run.state.turn)
            spent[0] += answer.usage.prompt_tokens
            spent[1] += answer.usage.completion_tokens
            return answer

        outcome = self.planner.plan(call, run.goal, run.criteria, tools, run.user_words(),
                                    state=run.state if reason else None, reason=reason)
        if outcome.specs is None:
            return outcome.question or "Could you tell me more about what you need?"
        subtasks = [{"title": s.title, "criterion": s.criterion, "tool": s.tool,
                     "args": redact(s.args, secret_fields(self._tool(s.tool)))}
                    for s in outcome.specs]
        yield self._record(run, PlanMade(run.state.plan_version + 1, outcome.source,
                                         outcome.reason, subtasks, spent[0], spent[1]))
        run.state.template_params = outcome.params or run.state.template_params
        self._save(run)
        return None

    def _act(self, run: _Run, answer: ChatResult, tools: dict[str, Tool], turn: int
             ) -> Generator[LogEntry, None, list[Action]]:
        state = run.state

        def attribute(name: str, args: Any) -> str | None:
            if name == COMPLETE_SUBTASK.name:
                return str(args.get("subtask_id")) if isinstance(args, dict) else None
            sub = state.attribute(name, args if isinstance(args, dict) else {})
            return sub.id if sub is not None else None

        prepared = _dispatch.prepare(answer.tool_calls, tools, run.evidence(), attribute)
        self._guard(run, prepared)
        started: list[LogEntry] = []

        def before(i: int) -> None:
            p = prepared[i]
            assert p.tool is not None and p.args is not None
            if not p.tool.read_only:  # write-ahead: an unknown outcome is known to be unknown
                started.append(self._record(run, ActionStarted(
                    turn, p.call.id, p.tool.name, redact(dict(p.args), secret_fields(p.tool)),
                    p.subtask_id)))

        def make_ctx(p: _dispatch.Prepared) -> RunContext[Any]:
            assert p.tool is not None
            digest = hashlib.sha256(canonical_args(p.args or {}).encode()).hexdigest()[:16]
            return RunContext(deps=run.deps, user_id=run.user_id, scope=run.scope,
                              task_id=run.task_id, subtask_id=p.subtask_id, turn=turn,
                              call_id=p.call.id, memory=self.memory,
                              idempotency_key=f"{run.task_id}:{p.tool.name}:{digest}")

        try:
            results = _dispatch.execute(prepared, self.toolset, make_ctx, self._pool(),
                                        before=before)
        except MemstrataError:
            raise
        except Exception as exc:  # a tool bug: record it, keep the task resumable, stop
            yield from started
            crashed = next((p for p in prepared if p.runnable), prepared[0])
            failure = ToolResult.fail(f"{type(exc).__name__}: {exc}", f"crash:{type(exc).__name__}")
            yield self._action(run, turn, crashed, failure, tools)
            self._save(run)
            raise ToolCrashError(f"tool {crashed.call.name} raised {type(exc).__name__}: {exc}",
                                 task_id=run.task_id) from exc
        yield from started
        actions: list[Action] = []
        for p, result in zip(prepared, results, strict=True):
            entry = self._action(run, turn, p, result, tools)
            assert isinstance(entry.item, Action)
            actions.append(entry.item)
            yield entry
        return actions

    def _guard(self, run: _Run, prepared: list[_dispatch.Prepared]) -> None:
        """Refuse a side effect that already succeeded, and completing a closed subtask."""
        done: dict[tuple[str, str], int] = {}
        for e in run.entries:  # recorded arguments are redacted: compare redacted ones
            if isinstance(e.item, Action) and e.item.success:
                done[(e.item.tool, canonical_args(e.item.args))] = e.step_no
        for p in prepared:
            if not p.runnable or p.tool is None:
                continue
            if p.tool.name == COMPLETE_SUBTASK.name:
                sub = run.state.get(p.subtask_id)
                if sub is None or not sub.open:
                    open_ids = [s.id for s in run.state.subtasks if s.open]
                    p.rejection = ToolResult.fail(f"no open subtask {p.subtask_id!r}; open: "
                                                  f"{open_ids}", "validation")
            elif self.settings.block_repeated_side_effects and not p.tool.read_only:
                shown = redact(p.args or {}, secret_fields(p.tool))
                step = done.get((p.tool.name, canonical_args(shown)))
                if step is not None:
                    p.rejection = ToolResult.fail(
                        f"{p.tool.name} with these arguments already succeeded (step {step}); "
                        "it is not done twice", "duplicate")

    def _action(self, run: _Run, turn: int, p: _dispatch.Prepared, result: ToolResult,
                tools: dict[str, Tool]) -> LogEntry:
        sub = run.state.get(p.subtask_id)
        status = None
        if sub is not None and sub.open:
            if result.success and (sub.tool == p.call.name
                                   or p.call.name == COMPLETE_SUBTASK.name):
                status = "done"
            elif (not result.success and sub.tool == p.call.name
                  and result.error_type not in SELF_CORRECTING):
                status = "failed"
        secret = secret_fields(p.tool)
        args = redact(dict(p.args if p.args is not None else p.raw_args), secret)
        if isinstance(args.get("_raw"), str):  # unparseable arguments, kept as text
            args["_raw"] = redact_json(args["_raw"], secret)
        return self._record(run, Action(
            turn=turn, call_id=p.call.id, tool=p.call.name, args=args, success=result.success,
            observation=summarize(result, tools.get(p.call.name)), data=result.data,
            error=result.error, error_type=result.error_type, retriable=result.retriable,
            subtask_id=p.subtask_id, latency_ms=result.latency_ms, attempts=result.attempts,
            cached=result.cached, notes=list(result.notes), subtask_status=status))

    def _after_actions(self, run: _Run, actions: list[Action], tools: dict[str, Tool]
                       ) -> Generator[LogEntry, None, None]:
        cfg, state = self.settings, run.state
        reason: str | None = None
        for a in actions:
            if a.success:
                continue
            tool_ = tools.get(a.tool)
            known = tool_.error_types if tool_ is not None else frozenset({"unknown_tool"})
            if a.error_type not in known and not (a.error_type or "").startswith("crash:"):
                reason = f"unregistered error type {a.error_type!r} from {a.tool}"
            if a.error_type == "timeout":
                yield from self._reflect(run, "timeout", a.tool, f"timeout:{a.tool}:{a.turn}")
            elif tool_ is not None and tool_.risk is not Risk.L1 and \
                    a.error_type not in SELF_CORRECTING:
                yield from self._reflect(run, "side_effect_failed", a.tool,
                                         f"side:{a.tool}:{a.turn}")
            if state.failures_by_tool.get(a.tool, 0) >= cfg.repeated_failures_reflect:
                yield from self._reflect(run, "repeated_failures", a.tool,
                                         f"repeated:{a.tool}:v{state.plan_version}")
        if reason is None and state.consecutive_failures >= cfg.failures_before_replan:
            reason = f"{state.consecutive_failures} consecutive failed actions"
        if reason is None and cfg.detect_drift and state.drift_strikes >= cfg.drift_patience:
            reason = f"goal drift: {state.drift_strikes} turns away from the goal sentence"
        if reason is None:
            return
        if state.replans >= cfg.max_replans:
            yield from self._fail(run, f"replan limit ({reason})", ReplanLimitExceeded)
        last = next((e.item for e in reversed(run.entries) if isinstance(e.item, Reflection)),
                    None)
        full = reason + (f"; reflection: {last.root_cause} -> {last.suggested_fix}"
                         if last is not None else "")
        question = yield from self._plan(run, reason=full)
        if question is not None:  # pragma: no cover - a replan always yields specs
            raise UsageError(question)

    def _reflect(self, run: _Run, trigger: str, tool_name: str | None, key: str
                 ) -> Generator[LogEntry, None, None]:
        if key in run.state.reflected:
            return
        yield self._record(run, audit.reflect(trigger, run.entries, tool=tool_name, key=key))

    # ------------------------------------------------------------ endings

    def _finish(self, run: _Run, text: str) -> Generator[LogEntry, None, RunResult]:
        metrics = audit.metrics(run.state, run.criteria, done=True)
        final = self._record(run, Final("done", text, "every acceptance criterion is met",
                                        metrics))
        yield final
        lesson: WriteDecision | MemstrataError | None = None
        if self.settings.write_lessons:
            line = audit.lesson_line(run.goal, run.entries, run.state)
            try:
                lesson = self.memory.remember(
                    run.user_id, line, type="experience", verified=True, scope=run.scope,
                    source="inferred", confidence=0.9, task_id=run.task_id,
                    step_id=str(final.step_no), metadata={"kind": "lesson"})
            except MemstrataError as exc:  # the task is done and recorded; say why no lesson
                lesson = exc
            else:
                run.state.lesson_id = lesson.record_id
        self._save(run, status="done")
        return self._result(run, "done", text, lesson)

    def _pause(self, run: _Run, question: str) -> Generator[LogEntry, None, RunResult]:
        yield self._record(run, Final("awaiting_user", question, "waiting for the user"))
        self._save(run, status="pending")
        return self._result(run, "awaiting_user", question)

    def _fail(self, run: _Run, reason: str, error: type[RunError]
              ) -> Generator[LogEntry, None, RunResult]:
        trigger = reason.split(" ")[0]
        yield from self._reflect(run, trigger, None, f"{trigger}:{run.state.turn}")
        metrics = audit.metrics(run.state, run.criteria, done=False)
        yield self._record(run, Final("failed", None, reason, metrics))
        self._save(run, status="failed")
        result = self._result(run, "failed", None)
        raise error(f"task {run.task_id} stopped: {reason}", task_id=run.task_id, result=result)

    def _result(self, run: _Run, status: Literal["done", "awaiting_user", "failed"],
                output: str | None, lesson: Any = None) -> RunResult:
        return RunResult(
            task_id=run.task_id, status=status, output=output,
            metrics=audit.metrics(run.state, run.criteria, done=status == "done"),
            subtasks=[{"id": s.id, "title": s.title, "status": s.status,
                       "criterion": s.criterion, "attempts": s.attempts,
                       "last_result": s.last_result} for s in run.state.subtasks],
            reflections=[e.item for e in run.entries if isinstance(e.item, Reflection)],
            lesson=lesson, context=run.last_context)

    # ------------------------------------------------------------ plumbing

    def _deps(self, deps: Any) -> Any:
        return self._overrides.get().get("deps", deps)

    def _pool(self) -> ThreadPoolExecutor | None:
        if self.settings.max_parallel <= 1:
            return None
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.settings.max_parallel,
                                                thread_name_prefix="agent-tools")
        return self._executor

    def _record(self, run: _Run, item: LogItem) -> LogEntry:
        step: Step = to_step(item)
        step_no = self.memory.episodic.record_step(run.user_id, run.task_id, step)
        entry = LogEntry(step_no, item)
        run.entries.append(entry)
        apply(run.state, entry, drift_threshold=self.settings.drift_threshold)
        return entry

    def _save(self, run: _Run, *, status: Any = None) -> None:
        record = self.memory.episodic.update_task(
            run.user_id, run.task_id, status=status,
            state=STATE.dump_python(run.state, mode="json"), expected_version=run.version)
        run.version = record.version

    def _chat(self, run: _Run, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
              purpose: str, turn: int) -> ChatResult:
        recorder = RecordingModel(self.model, db=self.memory.db, clock=self._clock,
                                  redact=self._redact_call)
        return recorder.chat_for(messages, user_id=run.user_id, task_id=run.task_id,
                                 turn=turn, purpose=purpose, tools=tools)

    def _context(self, run: _Run) -> BuiltContext:
        current = run.state.current()
        key = (current.id if current else None, run.state.plan_version,
               run.state.turn // max(1, self.settings.recall_refresh_turns))
        if run.memory_context is None or key != run.memory_context_key:
            query = f"{run.goal.sentence} {current.title if current else ''}".strip()
            run.memory_context = brief(self.memory, run.user_id, run.scope, query,
                                       self.settings.context)
            run.memory_context_key = key
        run.last_context = self.builder.build(
            goal=run.goal, criteria=run.criteria, state=run.state, entries=run.entries,
            memory=run.memory_context, interrupted=run.interrupted(), task_id=run.task_id,
            nonce=run.nonce)
        return run.last_context

    def _similarity(self, run: _Run, text: str | None) -> float | None:
        if not self.settings.detect_drift or not text:
            return None
        if self._drift is None:
            self._drift = DriftDetector(self.memory.embedder,
                                        threshold=self.settings.drift_threshold)
        return round(self._drift.similarity(run.goal.sentence, text), 4)


def _parse(content: str | None) -> tuple[str | None, str | None]:
    """(goal echo, thought) from the model's text."""
    if not content or not content.strip():
        return None, None
    match = _ECHO.search(content)
    if match is None or content[: match.start()].strip():
        return None, content.strip()
    rest = (content[: match.start()] + content[match.end():]).strip()
    return match.group(1), rest or None


def _drain(gen: Generator[LogEntry, None, RunResult]) -> RunResult:
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
