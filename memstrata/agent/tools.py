"""Tools: a typed, documented function plus a decorator.

::

    @tool(risk="L2", timeout=5, resource="order_id", errors={OrderShipped: "order_shipped"})
    def modify_address(ctx: RunContext[Shop], order_id: Annotated[str, Grounded()],
                       address: str) -> dict[str, str]:
        \"\"\"Change the shipping address of an order that has not shipped yet.

        Args:
            order_id: The order number exactly as the user gave it, e.g. "A1001".
            address: The complete new shipping address.
        \"\"\"

The JSON schema the model sees comes from the type hints and the docstring's
``Args:`` section, through a pydantic model that also validates the model's
arguments before the function runs. A first parameter typed :class:`RunContext`
is injected, never shown to the model.

What a tool may raise, and what the model then sees:

* :class:`ToolError` - a failure with an ``error_type`` and ``retriable`` flag;
* :class:`ModelRetry` - "fix your call": sent back like a validation error;
* an exception listed in ``errors=`` - translated to its error type;
* ``TimeoutError`` / ``ConnectionError`` - retriable failures.

Anything else is a bug in the tool: the step is recorded and the run stops
with :class:`~memstrata.agent.errors.ToolCrashError` (no blanket ``except``).

:class:`Grounded` marks an argument that must come from the user's own words (an
order id, an amount), as whole tokens: a value the model made up - or read in a
memory or a tool result - is rejected with ``not_grounded`` and the hint to ask
the user.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from memstrata.llm import Usage

from .errors import UsageError

if typing.TYPE_CHECKING:
    from .memory_view import MemoryView

__all__ = [
    "FRAMEWORK_ERROR_TYPES",
    "Grounded",
    "ModelRetry",
    "Risk",
    "RunContext",
    "Tool",
    "ToolError",
    "ToolResult",
    "tool",
]

DepsT = TypeVar("DepsT")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_CHARS = 1200

#: error types the kernel itself produces; anything else must be declared by a tool
FRAMEWORK_ERROR_TYPES: frozenset[str] = frozenset({
    "validation", "not_grounded", "unknown_tool", "malformed_arguments", "timeout",
    "unavailable", "circuit_open", "confirmation_required", "denied", "refused",
    "skipped", "tool_error", "retry_exhausted", "duplicate",
})


class Risk(StrEnum):
    """How dangerous a tool is; the :class:`~memstrata.agent.toolsets.RiskGate` acts on it."""

    L1 = "L1"  #: read-only: runs freely, may be served from the cache
    L2 = "L2"  #: side effects: runs only after the confirmation callback says yes
    L3 = "L3"  #: dangerous: refused unless the human-approval callback says yes


class ToolError(Exception):
    """Raised by a tool for a failure the model should see and may work around."""

    def __init__(self, message: str, *, error_type: str = "tool_error",
                 retriable: bool = False) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.retriable = retriable


class ModelRetry(Exception):
    """Raised by a tool to ask the model to correct its call (like a validation error)."""


@dataclass(frozen=True, slots=True)
class Grounded:
    """``Annotated[str, Grounded()]``: the value must be whole words the user said in
    this task (normalised: NFKC, casefolded, split on non-alphanumerics) - the kernel
    rejects invented, empty and partial identifiers (:mod:`memstrata.agent._grounding`).

    ``tool_outputs=True`` also accepts values a successful tool call returned in the
    task. Off by default: a tool's output is untrusted data, and a poisoned record
    could otherwise supply the id of someone else's order.
    """

    tool_outputs: bool = False


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The one result shape of every tool call.

    ``data`` is the full value (recorded in the episodic store); the model sees
    a summary of it (:func:`memstrata.agent._summary.summarize`).
    """

    success: bool
    data: Any = None
    error: str | None = None
    error_type: str | None = None
    retriable: bool = False
    attempts: int = 0
    latency_ms: float = 0.0
    cached: bool = False
    #: what the governance layer decided (e.g. "confirmed by callback")
    notes: tuple[str, ...] = ()
    kind: Literal["tool_result"] = "tool_result"

    @classmethod
    def ok(cls, data: Any, **extra: Any) -> ToolResult:
        return cls(success=True, data=data, **extra)

    @classmethod
    def fail(cls, error: str, error_type: str, *, retriable: bool = False,
             **extra: Any) -> ToolResult:
        return cls(success=False, error=error, error_type=error_type, retriable=retriable,
                   **extra)

    def public(self) -> dict[str, Any]:
        """The shape promised to callers: success, data, error, error_type, retriable."""
        return {"success": self.success, "data": self.data, "error": self.error,
                "error_type": self.error_type, "retriable": self.retriable}


@dataclass(slots=True)
class RunContext(Generic[DepsT]):
    """What a tool may know about the run that calls it."""

    #: the dependencies the agent was run with (a DB handle, an HTTP client, ...)
    deps: DepsT
    user_id: str
    scope: str
    task_id: str
    subtask_id: str | None = None
    #: the model turn this call belongs to
    turn: int = 0
    #: the model call's id for this tool call
    call_id: str = ""
    #: tokens spent by the run so far
    usage: Usage = field(default_factory=Usage)
    #: 0 on the first attempt, n on the n-th retry of this call
    retry: int = 0
    #: the agent's memory, for tools that read or write it (``None`` only outside a run)
    memory: MemoryView | None = None
    #: ``task:tool:hash(arguments)`` - the same for a retry, and for the same call made
    #: again after a crash: pass it to side-effecting backends so they apply it once
    idempotency_key: str = ""


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Google-style docstring -> (description, {arg: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = re.match(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?)"
                          r":\s*$", stripped)
        if header and not line.startswith(" "):
            section = header.group(1).lower()
            current = None
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters"):
            match = re.match(r"^\s{0,8}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if match and (current is None or len(line) - len(line.lstrip()) <= 4):
                current = match.group(1).lstrip("*")
                args[current] = match.group(2).strip()
            elif current is not None and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
    text = "\n".join(description).strip()
    return re.sub(r"\n{3,}", "\n\n", text), args


def _is_context(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    return origin is RunContext


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


ErrorMap = Mapping[type[BaseException], str | tuple[str, bool]]


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A function the model may call. Build it with :func:`tool`."""

    name: str
    description: str
    function: Callable[..., Any]
    args_model: type[BaseModel]
    takes_ctx: bool
    risk: Risk
    #: seconds before the call is abandoned (``None``: no limit, runs inline)
    timeout: float | None
    #: extra attempts for retriable failures
    retries: int
    #: serve identical calls from the short-lived cache (default: L1 tools)
    cache: bool
    #: exception type -> (error_type, retriable)
    errors: Mapping[type[BaseException], tuple[str, bool]]
    #: argument naming the resource the call touches (orders its calls with others)
    resource: str | None
    #: arguments that must be grounded in the conversation or tool outputs
    grounded: frozenset[str]
    summarize: Callable[[Any], str] | None
    empty_hint: str | None
    max_chars: int
    #: grounded arguments that tool outputs may ground too (``Grounded(tool_outputs=True)``)
    grounded_by_tools: frozenset[str] = frozenset()

    @property
    def read_only(self) -> bool:
        return self.risk is Risk.L1

    @property
    def error_types(self) -> frozenset[str]:
        """Error types this tool is known to produce (others trigger a replan)."""
        return FRAMEWORK_ERROR_TYPES | {t for t, _ in self.errors.values()}

    def definition(self) -> dict[str, Any]:
        """The tool in the chat-completions ``tools`` format."""
        schema = _strip_titles(self.args_model.model_json_schema())
        schema.setdefault("properties", {})
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": schema}}

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated arguments; raises pydantic's ``ValidationError``."""
        model = self.args_model.model_validate(dict(arguments))
        return {name: getattr(model, name) for name in type(model).model_fields}

    def resource_of(self, args: Mapping[str, Any]) -> str | None:
        if self.resource is None:
            return None
        value = args.get(self.resource)
        return None if value is None else f"{self.resource}={value}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def format_validation_error(tool_name: str, exc: ValidationError) -> str:
    """A message that tells the model exactly what to fix."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        parts.append(f"{where}: {err['msg']}")
    return f"invalid arguments for {tool_name}: " + "; ".join(parts) + \
        ". Fix the arguments and call the tool again."


def _build(
    func: Callable[..., Any], *, name: str | None, risk: Risk | str, timeout: float | None,
    retries: int, cache: bool | None, errors: ErrorMap | None, resource: str | None,
    summarize: Callable[[Any], str] | None, empty_hint: str | None, max_chars: int,
    description: str | None,
) -> Tool:
    tool_name = name or func.__name__
    if not _NAME.match(tool_name):
        raise UsageError(f"tool name {tool_name!r} must match {_NAME.pattern}")
    try:
        level = Risk(risk)
    except ValueError as exc:
        raise UsageError(f"tool {tool_name}: risk must be L1, L2 or L3, not {risk!r}") from exc
    if timeout is not None and timeout <= 0:
        raise UsageError(f"tool {tool_name}: timeout must be positive")
    if retries < 0:
        raise UsageError(f"tool {tool_name}: retries must be >= 0")
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except (NameError, TypeError) as exc:
        raise UsageError(f"tool {tool_name}: cannot resolve its type hints: {exc}") from exc
    doc_text, doc_args = _parse_docstring(func.__doc__)
    params = list(inspect.signature(func).parameters.values())
    takes_ctx = bool(params) and (
        _is_context(hints.get(params[0].name)) or params[0].name == "ctx"
    )
    fields: dict[str, Any] = {}
    grounded: set[str] = set()
    by_tools: set[str] = set()
    for i, param in enumerate(params):
        if i == 0 and takes_ctx:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"tool {tool_name}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise UsageError(f"tool {tool_name}: parameter {param.name!r} has no type hint")
        annotation = hints[param.name]
        if _is_context(annotation):
            raise UsageError(f"tool {tool_name}: RunContext must be the first parameter")
        metas = getattr(annotation, "__metadata__", ())
        for m in metas:
            if isinstance(m, Grounded):
                grounded.add(param.name)
                if m.tool_outputs:
                    by_tools.add(param.name)
        default = ... if param.default is inspect.Parameter.empty else param.default
        if any(isinstance(m, FieldInfo) for m in metas):
            fields[param.name] = (annotation, default)
        else:
            fields[param.name] = (annotation, Field(default, description=doc_args.get(param.name)))
    if resource is not None and resource not in fields:
        raise UsageError(f"tool {tool_name}: resource {resource!r} is not a parameter")
    try:
        model = create_model(
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(f"tool {tool_name}: its parameters cannot be validated: {exc}") from exc
    text = description or doc_text
    if not text:
        raise UsageError(f"tool {tool_name}: a docstring (or description=) tells the model "
                         "what it does")
    error_map: dict[type[BaseException], tuple[str, bool]] = {}
    for exc_type, spec in (errors or {}).items():
        error_map[exc_type] = (spec, False) if isinstance(spec, str) else (spec[0], spec[1])
    return Tool(
        name=tool_name, description=text, function=func, args_model=cast(type[BaseModel], model),
        takes_ctx=takes_ctx, risk=level, timeout=timeout, retries=retries,
        cache=(level is Risk.L1) if cache is None else cache, errors=error_map,
        resource=resource, grounded=frozenset(grounded), summarize=summarize,
        empty_hint=empty_hint, max_chars=max_chars, grounded_by_tools=frozenset(by_tools),
    )


@typing.overload
def tool(func: Callable[..., Any], /) -> Tool: ...
@typing.overload
def tool(
    *, name: str | None = None, risk: Risk | str = Risk.L1,
    timeout: float | None = DEFAULT_TIMEOUT, retries: int = 0, cache: bool | None = None,
    errors: ErrorMap | None = None, resource: str | None = None,
    summarize: Callable[[Any], str] | None = None, empty_hint: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS, description: str | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    func: Callable[..., Any] | None = None, /, *, name: str | None = None,
    risk: Risk | str = Risk.L1, timeout: float | None = DEFAULT_TIMEOUT, retries: int = 0,
    cache: bool | None = None, errors: ErrorMap | None = None, resource: str | None = None,
    summarize: Callable[[Any], str] | None = None, empty_hint: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS, description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed, documented function into a :class:`Tool` (bare or with options).

    Options are checked here, at decoration time, so a bad tool fails when the
    module is imported rather than in the middle of a run.
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return _build(f, name=name, risk=risk, timeout=timeout, retries=retries, cache=cache,
                      errors=errors, resource=resource, summarize=summarize,
                      empty_hint=empty_hint, max_chars=max_chars, description=description)

    return wrap(func) if func is not None else wrap


def canonical_args(args: Mapping[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, default=str, ensure_ascii=False)
