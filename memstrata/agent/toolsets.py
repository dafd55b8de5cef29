"""Toolsets: where tool calls are executed, and the wrappers that govern them.

A :class:`Toolset` holds tools and executes a call whose arguments are already
validated. Cross-cutting behaviour is a wrapper around a toolset, not a flag in
every tool::

    RiskGate(CachingToolset(FunctionToolset(tools)), confirm=ask_user, approve=None)

* :class:`FunctionToolset` - runs the function: per-tool timeout (in a daemon
  thread; a timed-out function cannot be killed in Python, so it is abandoned
  and counted as a failure), bounded retries with capped exponential backoff
  for retriable failures only, and a per-tool :class:`CircuitBreaker`.
* :class:`CachingToolset` - identical read-only calls of one user within
  ``ttl`` seconds are answered from a cache; any successful side-effecting call
  of that user clears it, so a read after a write is never stale.
* :class:`RiskGate` - L1 runs; L2 runs only when the ``confirm`` callback
  answers ``True`` or an approving :class:`Approval` (no callback: refused
  with ``confirmation_required``); L3 is refused unless the ``approve``
  callback approves the same way (default: refused). Any other answer - a
  truthy ``"no"``, ``1``, ``None`` - and any exception in the callback is a
  refusal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Protocol

from memstrata.clock import Clock, SystemClock

from ._redact import redact, secret_fields
from .errors import UsageError
from .tools import ModelRetry, Risk, RunContext, Tool, ToolError, ToolResult, canonical_args

__all__ = [
    "Approval",
    "ApprovalRequest",
    "BreakerPolicy",
    "BreakerState",
    "CachingToolset",
    "CircuitBreaker",
    "Decider",
    "FunctionToolset",
    "RetryBackoff",
    "RiskGate",
    "Toolset",
    "WrapperToolset",
    "decide",
]


class Toolset(Protocol):
    """Tools plus the way their calls run. Arguments arrive validated."""

    def tools(self) -> Sequence[Tool]: ...

    def call(self, tool: Tool, args: dict[str, Any], ctx: RunContext[Any]) -> ToolResult: ...


class BreakerState(Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """Open after ``failure_threshold`` consecutive failures; try again after ``cooldown`` s."""

    failure_threshold: int = 5
    cooldown: float = 30.0


@dataclass(frozen=True, slots=True)
class RetryBackoff:
    """Delay before retry n: ``base * 2**(n-1)``, capped at ``max_delay`` seconds."""

    base: float = 0.2
    max_delay: float = 2.0

    def delay(self, retry: int) -> float:
        return float(min(self.max_delay, self.base * 2 ** (retry - 1)))


class CircuitBreaker:
    """closed -> (threshold consecutive failures) -> open -> (cooldown) -> half-open:
    one trial call; success closes, failure re-opens. Thread-safe; time from ``clock``."""

    def __init__(self, policy: BreakerPolicy, clock: Clock) -> None:
        self.policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state()

    def _state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._clock.now().timestamp() - self._opened_at >= self.policy.cooldown:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def allow(self) -> bool:
        """May a call go through now? (Half-open lets exactly one trial through.)"""
        with self._lock:
            state = self._state()
            if state is BreakerState.CLOSED:
                return True
            if state is BreakerState.HALF_OPEN and not self._trial_running:
                self._trial_running = True
                return True
            return False

    def record(self, success: bool) -> None:
        with self._lock:
            self._trial_running = False
            if success:
                self._failures = 0
                self._opened_at = None
                return
            self._failures += 1
            if self._opened_at is not None or self._failures >= self.policy.failure_threshold:
                self._opened_at = self._clock.now().timestamp()

    def retry_in(self) -> float:
        with self._lock:
            if self._opened_at is None:
                return 0.0
            left = self.policy.cooldown - (self._clock.now().timestamp() - self._opened_at)
            return max(0.0, left)


_RETRIABLE_BUILTINS: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError)


class _Outcome:
    __slots__ = ("error", "value")

    def __init__(self) -> None:
        self.value: Any = None
        self.error: BaseException | None = None


class FunctionToolset:
    """Executes plain-function tools with timeout, retries and a circuit breaker."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        breaker: BreakerPolicy = BreakerPolicy(),
        backoff: RetryBackoff = RetryBackoff(),
        clock: Clock | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._clock = clock or SystemClock()
        self._breaker_policy = breaker
        self._breakers: dict[str, CircuitBreaker] = {}
        self._backoff = backoff
        self._sleep = sleep
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        if not isinstance(t, Tool):
            raise UsageError(f"{t!r} is not a tool; decorate the function with @tool")
        if t.name in self._tools:
            raise UsageError(f"two tools are named {t.name!r}")
        self._tools[t.name] = t
        self._breakers[t.name] = CircuitBreaker(self._breaker_policy, self._clock)

    def tools(self) -> Sequence[Tool]:
        return list(self._tools.values())

    def breaker(self, name: str) -> CircuitBreaker:
        return self._breakers[name]

    def call(self, tool: Tool, args: dict[str, Any], ctx: RunContext[Any]) -> ToolResult:
        breaker = self._breakers[tool.name]
        started = time.perf_counter()
        attempt = 0
        while True:
            if not breaker.allow():
                return ToolResult.fail(
                    f"{tool.name} is switched off after repeated failures (circuit open); "
                    f"retry in {breaker.retry_in():.0f}s or use another way",
                    "circuit_open", retriable=True, attempts=attempt,
                    latency_ms=(time.perf_counter() - started) * 1000)
            attempt += 1
            ctx.retry = attempt - 1
            result = self._attempt(tool, args, ctx)
            if result.error_type != "validation":
                breaker.record(result.success)
            if result.success or not result.retriable or attempt > tool.retries:
                if not result.success and result.retriable and tool.retries:
                    result = replace(result, error=f"{result.error} (gave up after {attempt} "
                                                   "attempts)")
                return replace(result, attempts=attempt,
                               latency_ms=(time.perf_counter() - started) * 1000)
            self._sleep(self._backoff.delay(attempt))

    def _attempt(self, tool: Tool, args: dict[str, Any], ctx: RunContext[Any]) -> ToolResult:
        call_args = (ctx,) if tool.takes_ctx else ()
        outcome = _Outcome()

        def run() -> None:
            try:
                outcome.value = tool.function(*call_args, **args)
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread,
                outcome.error = exc  # which sorts it and re-raises what it does not know

        if tool.timeout is None:
            run()
        else:
            worker = threading.Thread(target=run, daemon=True, name=f"tool-{tool.name}")
            worker.start()
            worker.join(tool.timeout)
            if worker.is_alive():
                return ToolResult.fail(f"{tool.name} did not finish within {tool.timeout:g}s",
                                       "timeout", retriable=True)
        exc = outcome.error
        if exc is None:
            value = outcome.value
            return value if isinstance(value, ToolResult) else ToolResult.ok(value)
        return _sort_exception(tool, exc)


def _sort_exception(tool: Tool, exc: BaseException) -> ToolResult:
    if isinstance(exc, ToolError):
        return ToolResult.fail(str(exc), exc.error_type, retriable=exc.retriable)
    if isinstance(exc, ModelRetry):
        return ToolResult.fail(str(exc), "validation")
    for exc_type, (error_type, retriable) in tool.errors.items():
        if isinstance(exc, exc_type):
            return ToolResult.fail(str(exc) or exc_type.__name__, error_type, retriable=retriable)
    if isinstance(exc, _RETRIABLE_BUILTINS):
        kind = "timeout" if isinstance(exc, TimeoutError) else "unavailable"
        return ToolResult.fail(f"{type(exc).__name__}: {exc}", kind, retriable=True)
    raise exc


class WrapperToolset:
    """Base of wrappers: delegates everything to ``inner``."""

    def __init__(self, inner: Toolset) -> None:
        self.inner = inner

    def tools(self) -> Sequence[Tool]:
        return self.inner.tools()

    def call(self, tool: Tool, args: dict[str, Any], ctx: RunContext[Any]) -> ToolResult:
        return self.inner.call(tool, args, ctx)


@dataclass(slots=True)
class _Entry:
    at: float
    result: ToolResult


class CachingToolset(WrapperToolset):
    """Serves identical read-only calls within ``ttl`` seconds from a per-user cache."""

    def __init__(self, inner: Toolset, *, ttl: float = 30.0, clock: Clock | None = None,
                 max_entries: int = 1024) -> None:
        super().__init__(inner)
        self.ttl = ttl
        self._clock = clock or SystemClock()
        self._max = max_entries
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str, str], _Entry] = {}
        self.hits = 0

    def call(self, tool: Tool, args: dict[str, Any], ctx: RunContext[Any]) -> ToolResult:
        now = self._clock.now().timestamp()
        key = (ctx.user_id, tool.name, canonical_args(args))
        if tool.cache and tool.read_only:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and now - entry.at <= self.ttl:
                    self.hits += 1
                    return replace(entry.result, cached=True, attempts=0, latency_ms=0.0)
        result = self.inner.call(tool, args, ctx)
        with self._lock:
            if not tool.read_only and result.success:
                for k in [k for k in self._entries if k[0] == ctx.user_id]:
                    del self._entries[k]
            elif tool.cache and tool.read_only and result.success:
                if len(self._entries) >= self._max:
                    oldest = min(self._entries, key=lambda k: self._entries[k].at)
                    del self._entries[oldest]
                self._entries[key] = _Entry(now, result)
        return result


@dataclass(frozen=True, slots=True)
class Approval:
    """An explicit answer of a confirmation / approval callback.

    Only ``True`` or an ``Approval`` whose ``approved`` is ``True`` lets a
    gated call run; any other answer (``"no"``, ``1``, ``None``, a dict) and
    any exception inside the callback is a refusal.
    """

    approved: bool
    #: who decided (a person, a desk, a policy), shown in the step's notes
    by: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a confirmation / approval callback is asked to decide."""

    tool: str
    risk: Risk
    args: dict[str, Any]
    description: str
    user_id: str
    task_id: str
    subtask_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: argument names whose values are secrets (``SecretStr`` fields); never shown
    secret_names: frozenset[str] = frozenset()

    def __str__(self) -> str:
        """The call as a person reads it; secret values are shown as ``[redacted]``."""
        shown = redact(self.args, self.secret_names)
        return f"{self.tool}(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


#: what a callback may answer; only ``True`` or an approving :class:`Approval` approves
Decision = bool | Approval | None
Decider = Callable[[ApprovalRequest], Decision | Any]


def decide(decider: Decider, request: ApprovalRequest) -> tuple[bool, str]:
    """(approved, note). Fails closed: only ``True`` or ``Approval(approved=True)``
    approves; any other answer, and any exception inside the callback, refuses."""
    try:
        answer = decider(request)
    except Exception as exc:  # noqa: BLE001 - application code deciding on a side effect:
        # whatever goes wrong in it must refuse the action, never run it or crash the run
        return False, f"refused: the callback raised {type(exc).__name__}"
    if answer is True:
        return True, "approved by callback"
    if isinstance(answer, Approval):
        who = f" by {answer.by}" if answer.by else ""
        note = f" ({answer.note})" if answer.note else ""
        if answer.approved is True:
            return True, f"approved{who}{note}"
        return False, f"refused{who}{note}"
    if answer is False or answer is None:
        return False, "refused by callback"
    return False, (f"refused: the callback answered a {type(answer).__name__}, not True or "
                   "an Approval")


class RiskGate(WrapperToolset):
    """Gates L2 calls on ``confirm`` and L3 calls on ``approve`` (absent: refused).

    A gate cannot be talked past: only an explicit approval runs the call (see
    :func:`decide`); a refusal is a failed result with ``error_type="denied"``
    (the step's outcome is ``refused``), never a tool crash.
    """

    def __init__(self, inner: Toolset, *, confirm: Decider | None = None,
                 approve: Decider | None = None) -> None:
        super().__init__(inner)
        self.confirm = confirm
        self.approve = approve

    def call(self, tool: Tool, args: dict[str, Any], ctx: RunContext[Any]) -> ToolResult:
        if tool.risk is Risk.L1:
            return self.inner.call(tool, args, ctx)
        request = ApprovalRequest(tool.name, tool.risk, dict(args), tool.description,
                                  ctx.user_id, ctx.task_id, ctx.subtask_id,
                                  secret_names=secret_fields(tool))
        if tool.risk is Risk.L2:
            if self.confirm is None:
                return ToolResult.fail(
                    f"{request} changes something and needs the user's confirmation, but no "
                    "confirmation channel is configured; tell the user what you would do",
                    "confirmation_required", notes=("L2: no confirm callback",))
            ok, note = decide(self.confirm, request)
            if not ok:
                return ToolResult.fail(f"the user did not confirm {request}; do not retry it "
                                       "unless the user asks again", "denied",
                                       notes=(f"L2: {note}",))
            result = self.inner.call(tool, args, ctx)
            return replace(result, notes=(*result.notes, f"L2: {note}"))
        if self.approve is None:
            return ToolResult.fail(f"{request} is a dangerous (L3) action and is refused: it "
                                   "needs a human's approval, which is not available",
                                   "refused", notes=("L3: refused, no approval callback",))
        ok, note = decide(self.approve, request)
        if not ok:
            return ToolResult.fail(f"a human refused {request}", "denied",
                                   notes=(f"L3: {note}",))
        result = self.inner.call(tool, args, ctx)
        return replace(result, notes=(*result.notes, f"L3: {note}"))
